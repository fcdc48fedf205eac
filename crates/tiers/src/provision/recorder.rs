//! A [`System`] that records the commands it runs, for the read-only probes of the checks.

use super::*;

/// A [`System`] that records the commands it runs (for the read-only probes of the checks).
pub(super) struct Recorder<'a> {
    pub(super) inner: &'a mut dyn System,
    pub(super) step: usize,
    pub(super) runs: Vec<ExecutedCommand>,
}

impl System for Recorder<'_> {
    fn run(&mut self, cmd: &CommandLine, timeout: Duration) -> Result<journal::Output, journal::CommandError> {
        let start = Instant::now();
        let out = self.inner.run(cmd, timeout)?;
        self.runs.push(ExecutedCommand {
            step: self.step,
            command: cmd.to_string(),
            status: out.status,
            stdout: out.stdout.clone(),
            stderr: out.stderr.clone(),
            seconds: start.elapsed().as_secs_f64(),
        });
        Ok(out)
    }
    fn run_secret(
        &mut self,
        cmd: &CommandLine,
        secrets: &[(usize, String)],
        timeout: Duration,
    ) -> Result<journal::Output, journal::CommandError> {
        self.inner.run_secret(cmd, secrets, timeout)
    }
    fn busy(&mut self, dev: &Path) -> std::io::Result<bool> {
        self.inner.busy(dev)
    }
    fn openers(&mut self, devices: &[(u32, u32)]) -> std::io::Result<Vec<crate::system::Opener>> {
        self.inner.openers(devices)
    }
    fn kernel_users(&mut self, dev: &Path) -> std::io::Result<Vec<String>> {
        self.inner.kernel_users(dev)
    }
    fn flock_free(&mut self, dev: &Path) -> std::io::Result<bool> {
        self.inner.flock_free(dev)
    }
    fn read_to_string(&mut self, path: &Path) -> std::io::Result<String> {
        self.inner.read_to_string(path)
    }
    fn read_bytes(&mut self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.inner.read_bytes(path)
    }
    fn write(&mut self, path: &Path, contents: &str) -> std::io::Result<()> {
        self.inner.write(path, contents)
    }
    fn write_private(&mut self, path: &Path, contents: &str) -> std::io::Result<()> {
        self.inner.write_private(path, contents)
    }
    fn lock_disk(&mut self, dev: &Path) -> std::io::Result<DiskLock> {
        self.inner.lock_disk(dev)
    }
    fn unlock_disk(&mut self, lock: DiskLock) {
        self.inner.unlock_disk(lock)
    }
    fn create_dir_all(&mut self, path: &Path, mode: u32) -> std::io::Result<()> {
        self.inner.create_dir_all(path, mode)
    }
    fn create_sparse_file(&mut self, path: &Path, size: u64) -> std::io::Result<()> {
        self.inner.create_sparse_file(path, size)
    }
    fn chown(&mut self, path: &Path, uid: u32, gid: u32, mode: u32) -> std::io::Result<()> {
        self.inner.chown(path, uid, gid, mode)
    }
    fn file_kind(&mut self, path: &Path) -> FileKind {
        self.inner.file_kind(path)
    }
    fn canonicalize(&mut self, path: &Path) -> std::io::Result<PathBuf> {
        self.inner.canonicalize(path)
    }
    fn list_dir(&mut self, path: &Path) -> std::io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn spawn(&mut self, daemon: &DaemonSpec) -> std::io::Result<journal::ProcessId> {
        self.inner.spawn(daemon)
    }
    fn tcp_reachable(&mut self, address: &str, port: u16) -> bool {
        self.inner.tcp_reachable(address, port)
    }
    fn is_alive(&mut self, process: journal::ProcessId) -> bool {
        self.inner.is_alive(process)
    }
    fn statx_dax(&mut self, path: &Path) -> std::io::Result<bool> {
        self.inner.statx_dax(path)
    }
    fn remove_file(&mut self, path: &Path) -> std::io::Result<()> {
        self.inner.remove_file(path)
    }
    fn has_program(&mut self, program: &str) -> bool {
        self.inner.has_program(program)
    }
    fn sleep(&mut self, d: Duration) {
        self.inner.sleep(d)
    }
}
