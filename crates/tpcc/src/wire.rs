//! A minimal PostgreSQL frontend (protocol 3.0 over a unix socket, or TCP) for the driver's hot path:
//! one virtual user's connection, statements parsed once, then per transaction one Bind,
//! Execute and Sync written with a single blocking `send` and the answer read back with
//! blocking `recv`s on the virtual user's own thread: no event loop, channel, task or row
//! allocation between the virtual user and its socket. It is what keeps the
//! client's CPU a few percent of the server's (see the crate README, "Virtual users and client
//! CPU"). Setup, the counter snapshots and client-side SQL use tokio-postgres.
//!
//! Only what the driver needs: authentication that asks for no password (peer or trust, as
//! pgtier's servers are set up on their socket) or scram-sha-256 over TCP (a driver on another
//! host), the extended query protocol with named statements, row counting (row contents are
//! received, never decoded), errors with their SQLSTATE.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, BytesMut};
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};

use crate::ConnectSpec;

/// The type OID of `int4` (the element type of the arrays the driver binds).
const INT4_OID: u32 = 23;

/// One bound parameter.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Param<'a> {
    /// `int4`.
    Int(i32),
    /// `bool`.
    Bool(bool),
    /// `varchar`, or NULL.
    Text(Option<&'a str>),
    /// One-dimensional `int4[]` without NULLs.
    IntArray(&'a [i32]),
    /// A whole number as `numeric`.
    Numeric(i64),
}

/// How parameters and results travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Text, as libpq's `PQexecPrepared` with no formats sends and asks (HammerDB's Pgtcl).
    Text,
    /// Binary, as tokio-postgres sends and asks.
    Binary,
}

/// Why a call failed.
#[derive(Debug)]
pub(crate) enum WireError {
    /// The server answered with an error; the connection is still usable.
    Server {
        /// SQLSTATE.
        code: String,
        /// Severity, message and detail, as [`crate::describe_pg_error`] writes them.
        message: String,
    },
    /// The socket failed or the server broke the protocol: the connection is unusable.
    Broken(String),
}

impl WireError {
    /// The SQLSTATE, for server errors.
    pub(crate) fn code(&self) -> Option<&str> {
        match self {
            WireError::Server { code, .. } => Some(code),
            WireError::Broken(_) => None,
        }
    }

    /// True when the connection must be replaced.
    pub(crate) fn is_closed(&self) -> bool {
        matches!(self, WireError::Broken(_))
    }

    /// The kind the driver counts it under (the same names as
    /// [`crate::transactions::error_kind`]).
    pub(crate) fn kind(&self) -> &'static str {
        match self.code() {
            Some("40001") => "serialization_failure",
            Some("40P01") => "deadlock",
            Some("2D000") => "invalid_transaction_termination",
            _ => "other",
        }
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Server { message, .. } => f.write_str(message),
            WireError::Broken(m) => f.write_str(m),
        }
    }
}

fn io(context: &str, e: std::io::Error) -> WireError {
    WireError::Broken(format!("{context}: {e}"))
}

/// How often a blocked read wakes up to look at the abandon flag.
const READ_TICK: Duration = Duration::from_millis(250);

/// A connection's socket.
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    /// Connects to `spec`'s socket, or to its TCP address (no Nagle delay: a transaction is one
    /// write), with reads that wake every [`READ_TICK`]; also says what it connected to.
    fn connect(spec: &ConnectSpec, timeout: Duration) -> Result<(Stream, String), WireError> {
        let (stream, target) = match &spec.tcp {
            None => {
                let path = spec.socket_dir.join(format!(".s.PGSQL.{}", spec.port));
                let target = path.display().to_string();
                let s = UnixStream::connect(&path).map_err(|e| io(&format!("connect to {target}"), e))?;
                s.set_read_timeout(Some(READ_TICK)).map_err(|e| io(&format!("connect to {target}"), e))?;
                (Stream::Unix(s), target)
            }
            Some(t) => {
                let at = SocketAddr::new(t.address, spec.port);
                let target = format!("{at} over TCP");
                let context = |e| io(&format!("connect to {target}"), e);
                let s = TcpStream::connect_timeout(&at, timeout).map_err(context)?;
                s.set_nodelay(true).map_err(context)?;
                s.set_read_timeout(Some(READ_TICK)).map_err(context)?;
                (Stream::Tcp(s), target)
            }
        };
        Ok((stream, target))
    }

    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.write_all(buf),
            Stream::Tcp(s) => s.write_all(buf),
        }
    }
}

/// One connection.
pub(crate) struct WireConn {
    stream: Stream,
    /// Received bytes not yet consumed are `rbuf[head..tail]`; the rest is free space.
    rbuf: Vec<u8>,
    head: usize,
    tail: usize,
    wbuf: BytesMut,
    /// Raised by the driver when it no longer waits for this virtual user: a read then gives up.
    abandon: Arc<AtomicBool>,
    /// While connecting: when to give up.
    deadline: Option<Instant>,
}

/// What [`WireConn::read_until_ready`] saw.
struct Answer {
    rows: u64,
    error: Option<WireError>,
}

impl WireConn {
    /// Connects to `spec`'s socket as its role and database and waits until the server is
    /// ready for queries (at most `timeout`). Reads give up with [`WireError::Broken`] once
    /// `abandon` is raised.
    pub(crate) fn connect(
        spec: &ConnectSpec,
        application_name: &str,
        timeout: Duration,
        abandon: Arc<AtomicBool>,
    ) -> Result<WireConn, WireError> {
        let (stream, target) = Stream::connect(spec, timeout)?;
        let context = || format!("connect to {target}");
        let mut c = WireConn {
            stream,
            rbuf: vec![0; 32 * 1024],
            head: 0,
            tail: 0,
            wbuf: BytesMut::with_capacity(1024),
            abandon,
            deadline: Some(Instant::now() + timeout),
        };
        let mut body = BytesMut::new();
        body.put_i32(196_608); // protocol 3.0
        for (k, v) in
            [("user", spec.user.as_str()), ("database", spec.database.as_str()), ("application_name", application_name)]
        {
            put_cstr(&mut body, k);
            put_cstr(&mut body, v);
        }
        body.put_u8(0);
        c.wbuf.put_i32(body.len() as i32 + 4);
        c.wbuf.put_slice(&body);
        c.flush()?;
        let password = spec.tcp.as_ref().map(|t| t.password.as_str());
        let mut scram = None;
        // Authentication, parameter statuses, backend key, ready.
        loop {
            let (tag, msg) = c.next_message().map_err(|e| match e {
                WireError::Broken(m) => WireError::Broken(format!("{}: {m}", context())),
                other => other,
            })?;
            match tag {
                b'R' => c.authenticate(&msg, password, &mut scram)?,
                b'E' => return Err(server_error(&msg)),
                b'Z' => {
                    c.deadline = None;
                    return Ok(c);
                }
                _ => {}
            }
        }
    }

    /// Answers one authentication request: none (0), or the three steps of scram-sha-256
    /// (10: the mechanisms offered, 11: the server's challenge, 12: its proof) with `password`.
    fn authenticate(
        &mut self,
        msg: &[u8],
        password: Option<&str>,
        scram: &mut Option<ScramSha256>,
    ) -> Result<(), WireError> {
        let mut body = msg;
        let code = body.get_i32();
        let broken = |what: &str, e: std::io::Error| WireError::Broken(format!("scram-sha-256 {what}: {e}"));
        match (code, password) {
            (0, _) => return Ok(()),
            (10, Some(p)) => {
                let offered = body.split(|&b| b == 0).any(|m| m == SCRAM_SHA_256.as_bytes());
                if !offered {
                    return Err(WireError::Broken("the server offers no scram-sha-256 authentication".into()));
                }
                let s = ScramSha256::new(p.as_bytes(), ChannelBinding::unsupported());
                let start = self.begin(b'p');
                put_cstr(&mut self.wbuf, SCRAM_SHA_256);
                self.wbuf.put_i32(s.message().len() as i32);
                self.wbuf.put_slice(s.message());
                self.end(start);
                *scram = Some(s);
            }
            (11, Some(_)) => {
                let s = scram.as_mut().ok_or_else(|| WireError::Broken("SASL continue before its start".into()))?;
                s.update(body).map_err(|e| broken("challenge", e))?;
                let start = self.begin(b'p');
                self.wbuf.put_slice(s.message());
                self.end(start);
            }
            (12, Some(_)) => {
                let s = scram.as_mut().ok_or_else(|| WireError::Broken("SASL final before its start".into()))?;
                return s.finish(body).map_err(|e| broken("server proof", e));
            }
            _ => {
                return Err(WireError::Broken(format!(
                    "the server asks for authentication method {code}; the TPC-C driver connects with peer or trust authentication on a socket, or scram-sha-256 over TCP"
                )));
            }
        }
        self.flush()
    }

    /// Runs `sql` with the simple query protocol.
    pub(crate) fn simple(&mut self, sql: &str) -> Result<(), WireError> {
        let start = self.begin(b'Q');
        put_cstr(&mut self.wbuf, sql);
        self.end(start);
        self.flush()?;
        let a = self.read_until_ready()?;
        a.error.map_or(Ok(()), Err)
    }

    /// Parses `sql` as the named statement `name` with parameter types `oids`.
    pub(crate) fn prepare(&mut self, name: &str, sql: &str, oids: &[u32]) -> Result<(), WireError> {
        let start = self.begin(b'P');
        put_cstr(&mut self.wbuf, name);
        put_cstr(&mut self.wbuf, sql);
        self.wbuf.put_i16(oids.len() as i16);
        for o in oids {
            self.wbuf.put_u32(*o);
        }
        self.end(start);
        self.sync();
        self.flush()?;
        let a = self.read_until_ready()?;
        a.error.map_or(Ok(()), Err)
    }

    /// Executes the named statement with `params` in autocommit (Bind, Execute, Sync in one
    /// write) and returns the number of rows it returned. `format` is used for the
    /// parameters and asked for the results.
    pub(crate) fn call(&mut self, statement: &str, params: &[Param<'_>], format: Format) -> Result<u64, WireError> {
        let code: i16 = match format {
            Format::Text => 0,
            Format::Binary => 1,
        };
        let start = self.begin(b'B');
        self.wbuf.put_u8(0); // unnamed portal
        put_cstr(&mut self.wbuf, statement);
        self.wbuf.put_i16(1);
        self.wbuf.put_i16(code);
        self.wbuf.put_i16(params.len() as i16);
        for p in params {
            put_param(&mut self.wbuf, p, format);
        }
        self.wbuf.put_i16(1);
        self.wbuf.put_i16(code);
        self.end(start);
        let start = self.begin(b'E');
        self.wbuf.put_u8(0);
        self.wbuf.put_i32(0);
        self.end(start);
        self.sync();
        self.flush()?;
        let a = self.read_until_ready()?;
        match a.error {
            Some(e) => Err(e),
            None => Ok(a.rows),
        }
    }

    fn begin(&mut self, tag: u8) -> usize {
        self.wbuf.put_u8(tag);
        let at = self.wbuf.len();
        self.wbuf.put_i32(0);
        at
    }

    fn end(&mut self, len_at: usize) {
        let len = (self.wbuf.len() - len_at) as i32;
        self.wbuf[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
    }

    fn sync(&mut self) {
        self.wbuf.put_u8(b'S');
        self.wbuf.put_i32(4);
    }

    fn flush(&mut self) -> Result<(), WireError> {
        let r = self.stream.write_all(&self.wbuf);
        self.wbuf.clear();
        r.map_err(|e| io("send to the server", e))
    }

    /// The next whole message: its tag and body.
    fn next_message(&mut self) -> Result<(u8, Vec<u8>), WireError> {
        loop {
            let buf = &self.rbuf[self.head..self.tail];
            if buf.len() >= 5 {
                let len = i32::from_be_bytes(buf[1..5].try_into().expect("4 bytes")) as usize;
                if len < 4 {
                    return Err(WireError::Broken(format!("bad message length {len} from the server")));
                }
                if buf.len() > len {
                    let msg = (buf[0], buf[5..len + 1].to_vec());
                    self.head += len + 1;
                    return Ok(msg);
                }
            }
            self.fill()?;
        }
    }

    /// One blocking `recv` into the free end of the read buffer (moving the unconsumed bytes
    /// to the front, or growing the buffer, when it is full), waking every [`READ_TICK`] to
    /// look at the abandon flag and the connect deadline.
    fn fill(&mut self) -> Result<(), WireError> {
        if self.head == self.tail {
            (self.head, self.tail) = (0, 0);
        }
        if self.tail == self.rbuf.len() {
            if self.head > 0 {
                self.rbuf.copy_within(self.head..self.tail, 0);
                (self.head, self.tail) = (0, self.tail - self.head);
            } else {
                self.rbuf.resize(self.rbuf.len() * 2, 0);
            }
        }
        loop {
            match self.stream.read(&mut self.rbuf[self.tail..]) {
                Ok(0) => return Err(WireError::Broken("the server closed the connection".into())),
                Ok(n) => {
                    self.tail += n;
                    return Ok(());
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                    let late = self.deadline.is_some_and(|d| Instant::now() >= d);
                    if late || self.abandon.load(Ordering::Relaxed) {
                        return Err(WireError::Broken(
                            if late {
                                "no answer from the server in time"
                            } else {
                                "abandoned while waiting for the server"
                            }
                            .into(),
                        ));
                    }
                }
                Err(e) => return Err(io("read from the server", e)),
            }
        }
    }

    /// Reads messages up to ReadyForQuery, counting data rows and keeping the first error.
    /// Whole messages are scanned in place; only the bytes are consumed.
    fn read_until_ready(&mut self) -> Result<Answer, WireError> {
        let mut a = Answer { rows: 0, error: None };
        loop {
            let buf = &self.rbuf[self.head..self.tail];
            let mut at = 0;
            while buf.len() - at >= 5 {
                let tag = buf[at];
                let len = i32::from_be_bytes(buf[at + 1..at + 5].try_into().expect("4 bytes")) as usize;
                if len < 4 {
                    return Err(WireError::Broken(format!("bad message length {len} from the server")));
                }
                if buf.len() - at < len + 1 {
                    break;
                }
                let body = &buf[at + 5..at + 1 + len];
                at += len + 1;
                match tag {
                    b'D' => a.rows += 1,
                    b'E' if a.error.is_none() => a.error = Some(server_error(body)),
                    b'Z' => {
                        self.head += at;
                        return Ok(a);
                    }
                    _ => {} // BindComplete, ParseComplete, CommandComplete, notices, statuses
                }
            }
            self.head += at;
            self.fill()?;
        }
    }
}

fn put_cstr(buf: &mut BytesMut, s: &str) {
    buf.put_slice(s.as_bytes());
    buf.put_u8(0);
}

fn put_param(buf: &mut BytesMut, p: &Param<'_>, format: Format) {
    let len_at = buf.len();
    buf.put_i32(0);
    match (p, format) {
        (Param::Text(None), _) => {
            buf[len_at..len_at + 4].copy_from_slice(&(-1i32).to_be_bytes());
            return;
        }
        (Param::Text(Some(s)), _) => buf.put_slice(s.as_bytes()),
        (Param::Int(v), Format::Binary) => buf.put_i32(*v),
        (Param::Bool(b), Format::Binary) => buf.put_u8(u8::from(*b)),
        (Param::Numeric(v), Format::Binary) => crate::copy::put_numeric(buf, *v, 0),
        (Param::IntArray(values), Format::Binary) => {
            buf.put_i32(1); // dimensions
            buf.put_i32(0); // no NULLs
            buf.put_u32(INT4_OID);
            buf.put_i32(values.len() as i32);
            buf.put_i32(1); // lower bound
            for v in *values {
                buf.put_i32(4);
                buf.put_i32(*v);
            }
        }
        (Param::Int(v), Format::Text) => put_decimal(buf, i64::from(*v)),
        (Param::Numeric(v), Format::Text) => put_decimal(buf, *v),
        (Param::Bool(b), Format::Text) => buf.put_u8(if *b { b't' } else { b'f' }),
        (Param::IntArray(values), Format::Text) => {
            buf.put_u8(b'{');
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    buf.put_u8(b',');
                }
                put_decimal(buf, i64::from(*v));
            }
            buf.put_u8(b'}');
        }
    }
    let len = (buf.len() - len_at - 4) as i32;
    buf[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
}

fn put_decimal(buf: &mut BytesMut, v: i64) {
    let mut digits = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        buf.put_u8(b'-');
    }
    buf.put_slice(&digits[i..]);
}

/// An ErrorResponse body: fields of a type byte and a C string, ended by a zero byte.
fn server_error(body: &[u8]) -> WireError {
    let (mut severity, mut code, mut message, mut detail) = ("ERROR", "", "", None);
    let mut rest = body;
    while let Some((&field, tail)) = rest.split_first() {
        if field == 0 {
            break;
        }
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let value = std::str::from_utf8(&tail[..end]).unwrap_or("?");
        match field {
            b'V' => severity = value,
            b'C' => code = value,
            b'M' => message = value,
            b'D' => detail = Some(value),
            _ => {}
        }
        rest = tail.get(end + 1..).unwrap_or(&[]);
    }
    let mut m = format!("{severity}: {message} (SQLSTATE {code})");
    if let Some(d) = detail {
        m.push_str(&format!("; detail: {d}"));
    }
    WireError::Server { code: code.to_string(), message: m }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(p: Param<'_>, f: Format) -> Vec<u8> {
        let mut b = BytesMut::new();
        put_param(&mut b, &p, f);
        b.to_vec()
    }

    #[test]
    fn parameters_in_both_formats() {
        assert_eq!(encoded(Param::Int(-12), Format::Text), b"\0\0\0\x03-12");
        assert_eq!(encoded(Param::Int(7), Format::Binary), [0, 0, 0, 4, 0, 0, 0, 7]);
        assert_eq!(encoded(Param::Text(None), Format::Binary), [255, 255, 255, 255]);
        assert_eq!(encoded(Param::Text(Some("ab")), Format::Text), b"\0\0\0\x02ab");
        assert_eq!(encoded(Param::IntArray(&[1, 20]), Format::Text), b"\0\0\0\x06{1,20}");
        let bin = encoded(Param::IntArray(&[5]), Format::Binary);
        assert_eq!(bin.len(), 4 + 20 + 8);
        assert_eq!(&bin[4..8], &[0, 0, 0, 1]);
        assert_eq!(encoded(Param::Bool(true), Format::Text), b"\0\0\0\x01t");
        assert_eq!(encoded(Param::Numeric(5000), Format::Text), b"\0\0\0\x045000");
        assert_eq!(encoded(Param::Numeric(0), Format::Text), b"\0\0\0\x010");
    }

    #[test]
    fn error_responses_keep_the_sqlstate() {
        let body = b"SERROR\0VERROR\0C40P01\0Mdeadlock detected\0DProcess 1 waits\0\0";
        let e = server_error(body);
        assert_eq!(e.code(), Some("40P01"));
        assert_eq!(e.kind(), "deadlock");
        assert!(!e.is_closed());
        assert_eq!(e.to_string(), "ERROR: deadlock detected (SQLSTATE 40P01); detail: Process 1 waits");
        assert_eq!(
            server_error(b"C2D000\0Minvalid transaction termination\0\0").kind(),
            "invalid_transaction_termination"
        );
        assert!(WireError::Broken("x".into()).is_closed());
    }
}
