//! What an experiment file may not ask for: settings pgtier owns or that run commands, mkfs and
//! mount options that reach other devices, and the pgbench arguments it may add.

/// pgbench run options an experiment may add: (flag, takes a value as the next argument).
/// Everything else (connection, clients, threads, duration, logs, custom scripts with \shell) is
/// pgtier's, or could run commands as root.
pub(crate) const PGBENCH_RUN_ARGS: &[(&str, bool)] = &[
    ("-n", false),
    ("--no-vacuum", false),
    ("-M", true),
    ("--protocol", false),
    ("--max-tries", false),
    ("-R", true),
    ("--rate", false),
    ("-L", true),
    ("--latency-limit", false),
    ("--verbose-errors", false),
    ("--failures-detailed", false),
    ("--random-seed", false),
];

/// pgbench -i options an experiment may add.
pub(crate) const PGBENCH_INIT_ARGS: &[(&str, bool)] = &[
    ("-I", true),
    ("--init-steps", false),
    ("-F", true),
    ("--fillfactor", false),
    ("--partitions", false),
    ("--partition-method", false),
    ("--unlogged-tables", false),
    ("--foreign-keys", false),
    ("-q", false),
    ("--quiet", false),
];

/// The first argument not on the allow-list (long options may carry `=value`).
pub(crate) fn disallowed_args(args: &[String], allowed: &[(&str, bool)]) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let name = a.split('=').next().unwrap_or(a);
        match allowed.iter().find(|(f, _)| *f == name) {
            Some((_, true)) => i += 2,
            Some((_, false)) => i += 1,
            None => return Some(a.clone()),
        }
    }
    None
}

/// Settings pgtier owns (the private socket, the data directory, authentication) or that would
/// hand a configuration value to a shell or load files from elsewhere.
pub fn reserved_setting(name: &str) -> Option<String> {
    const OWNED: [&str; 12] = [
        "data_directory",
        "config_file",
        "hba_file",
        "ident_file",
        "external_pid_file",
        "listen_addresses",
        "port",
        "unix_socket_directories",
        "unix_socket_group",
        "unix_socket_permissions",
        "logging_collector",
        "log_timezone",
    ];
    const SHELL_OR_FILES: [&str; 8] = [
        "archive_command",
        "archive_library",
        "restore_command",
        "archive_cleanup_command",
        "recovery_end_command",
        "ssl_passphrase_command",
        "include",
        "include_dir",
    ];
    if OWNED.contains(&name) {
        Some(format!(
            "{name} is set by pgtier (a private socket, its own data directory, peer authentication); remove it from the profile"
        ))
    } else if SHELL_OR_FILES.contains(&name) || name == "include_if_exists" {
        Some(format!(
            "{name} runs a command or reads other files; pgtier does not pass it on (remove it from the profile)"
        ))
    } else {
        None
    }
}

/// Why an mkfs.xfs option is refused: it would make mkfs write to a device pgtier did not check,
/// or force an overwrite the experiment file must ask for with `allow_wipe`.
pub fn unsafe_mkfs_option(o: &str) -> Option<String> {
    if o.contains("logdev") || o.contains("rtdev") {
        return Some(format!(
            "{o:?} names another device, which pgtier has not checked; an external log or realtime device is not supported"
        ));
    }
    if o.starts_with("name=") || o.contains(",name=") || o.starts_with("file") || o.contains(",file") {
        return Some(format!("{o:?} points mkfs.xfs at a different target; pgtier formats the device it checked"));
    }
    if o == "--force" || (o.starts_with('-') && !o.starts_with("--") && o[1..].contains('f')) {
        return Some(format!(
            "{o:?} forces an overwrite; set allow_wipe = true on the device instead (pgtier then passes -f itself)"
        ));
    }
    None
}

/// Why a mount option is refused: it names another device, which pgtier has not checked.
pub(crate) fn unsafe_mount_option(o: &str) -> Option<String> {
    (o.contains("logdev") || o.contains("rtdev")).then(|| {
        format!("{o:?} names another device, which pgtier has not checked; an external log or realtime device is not supported")
    })
}
