//! The constant scripts of a target host's steps, and how such a step reads in the plan: data
//! the plan prints, made by [`crate::build::target`].

/// `mkdir -- $1`, then (only if it made the directory) the empty file `$2`: the mark its undo
/// looks for before it removes anything (and removes with it). Exits 1 when it made nothing,
/// [`MADE_NOT_MARKED`] when it made the directory but could not write the mark.
pub const MKDIR_MARKED: &str = r#"mkdir -- "$1" || exit 1; { mkdir -p -m 700 -- "${2%/*}" && : > "$2"; } || exit 3"#;

/// `ln -s -- $1 $2`, then (only if it made the link) the mark `$3`; the same exit statuses.
pub const LINK_MARKED: &str =
    r#"ln -s -T -- "$1" "$2" || exit 1; { mkdir -p -m 700 -- "${3%/*}" && : > "$3"; } || exit 3"#;

/// The exit status of [`MKDIR_MARKED`] and [`LINK_MARKED`] when the item was made but its mark
/// could not be written (`/run` full, say): the executor then keeps an undo that removes the
/// item without looking for a mark.
pub const MADE_NOT_MARKED: i32 = 3;

/// How an export step reads in the plan: a marked `mkdir` or `ln -s` as the command it makes
/// and its mark; anything else as its words.
pub fn describe_words(words: &[String]) -> String {
    let q = |w: &String| journal::command::posix_command(std::slice::from_ref(w));
    match words {
        [_, _, script, _, path, mark] if script == MKDIR_MARKED => format!("mkdir -- {} && : > {}", q(path), q(mark)),
        [_, _, script, _, to, at, mark] if script == LINK_MARKED => {
            format!("ln -s -T -- {} {} && : > {}", q(to), q(at), q(mark))
        }
        [_, _, script, _, nvmet, addr, port, admit @ ..] if script == NVMET_CONFLICTS => format!(
            "check {nvmet}/ports/*/addr_* has no port on {addr} port {port} (nor on the wildcard address){}  # sh -c <NVMET_CONFLICTS> (crates/tiers/src/plan/host_words.rs)",
            admit.first().map(|n| format!(", and {nvmet}/hosts/ no entry {n}")).unwrap_or_default()
        ),
        _ => journal::command::posix_command(words),
    }
}

/// Exits 1, saying why on stderr, when nvmet's configuration on the host (`$1`) is in the way
/// of an export on TCP address `$2`, port `$3`: a port already listening there (or on the
/// wildcard address), or, with `$4`, an entry hosts/`$4` for this machine's host NQN that
/// another configuration made (pgtier makes and removes its own).
pub const NVMET_CONFLICTS: &str = r#"c=$1; addr=$2; svc=$3; nqn=${4:-}; bad=
for p in "$c"/ports/*; do
  [ -d "$p" ] || continue
  [ "$(cat "$p/addr_trtype" 2>/dev/null)" = tcp ] || continue
  [ "$(cat "$p/addr_trsvcid" 2>/dev/null)" = "$svc" ] || continue
  a=$(cat "$p/addr_traddr" 2>/dev/null)
  case "$a" in
    "$addr"|0.0.0.0|::) bad="$bad; nvmet port ${p##*/} already listens on $a port $svc (TCP), where pgtier's own port would fail to listen (EADDRINUSE): give the device another \`port\` (or remove that port)" ;;
  esac
done
if [ -n "$nqn" ] && [ -d "$c/hosts/$nqn" ]; then
  bad="$bad; nvmet already has hosts/$nqn (another configuration admits this machine's host NQN): pgtier makes and removes an entry of its own, so remove that one, or give the device another host_nqn and host_id for this run"
fi
[ -z "$bad" ] || { printf '%s\n' "${bad#; }" >&2; exit 1; }
exit 0"#;
