//! The built-in lists: the floor, the unsafe names, the credential names, and the
//! names whose values are checked. Every entry earns its place with a reason, and
//! the reasons are what `envwrap explain` and docs/policy.md show.
//!
//! Adding an entry here changes what every policy does: it is a security decision,
//! not a convenience edit, and it needs a reason as concrete as the ones below.

/// One built-in list entry: a name or `*` glob, and why it is on the list.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub pattern: &'static str,
    pub reason: &'static str,
}

const fn e(pattern: &'static str, reason: &'static str) -> Entry {
    Entry { pattern, reason }
}

/// `base = "floor"`: the smallest environment ordinary commands work in. It is the
/// exec unit's default passthrough list (docs/policy.md, section 14). Credentials, cloud and CI
/// variables and the proxy family are absent on purpose: proxy URLs routinely embed
/// credentials, so they must be kept by name.
pub const FLOOR: &[Entry] = &[
    e("PATH", "command resolution"),
    e("HOME", "the config and cache root nearly every tool reads"),
    e("USER", "process identity for git and ssh"),
    e(
        "LOGNAME",
        "process identity for git and ssh (POSIX spelling)",
    ),
    e("SHELL", "tools that re-exec a login shell"),
    e(
        "LANG",
        "text encoding; without it output falls back to the C locale",
    ),
    e("LC_ALL", "text encoding override"),
    e("LC_CTYPE", "character classification and encoding"),
    e("TERM", "some programs abort or emit raw escapes without it"),
    e("TZ", "timestamps would silently switch to the host default"),
    e("TMPDIR", "POSIX scratch space"),
];

/// Names that make a program run code or load files chosen by whoever set them:
/// loader, shell and interpreter start-up hooks. Stripped unless a policy keeps the
/// name by exact name (`unsafe = "strip"`, the default). Taken from sudo's
/// `initial_badenv_table` and glibc's `UNSECURE_ENVVARS`, narrowed to hooks: plain
/// library search paths such as PYTHONPATH are not on it (see docs/policy.md).
pub const UNSAFE_NAMES: &[Entry] = &[
    e("LD_*", "the dynamic loader: preload, audit and search-path hooks (the shim's own LD_PRELOAD is exempt)"),
    e("_RLD*", "loader hooks on other systems; harmless to drop on Linux"),
    e("GCONV_PATH", "glibc loads character-conversion modules from it"),
    e("GETCONF_DIR", "glibc getconf runs helpers from it"),
    e("HOSTALIASES", "redirects host name resolution"),
    e("LOCALDOMAIN", "changes DNS search domains"),
    e("RES_OPTIONS", "changes resolver behaviour"),
    e("RESOLV_HOST_CONF", "points the resolver at another configuration file"),
    e("NLSPATH", "message catalogues read from an arbitrary path"),
    e("LOCPATH", "locale data read from an arbitrary path"),
    e("MALLOC_TRACE", "glibc writes a trace to the named file"),
    e("BASH_ENV", "bash sources this file before running a script"),
    e("ENV", "sh and bash in POSIX mode source this file"),
    e("BASH_FUNC_*", "exported bash functions are code"),
    e("SHELLOPTS", "turns on shell options such as xtrace for every script"),
    e("BASHOPTS", "turns on bash options for every script"),
    e("PS4", "expanded, with command substitution, under xtrace"),
    e("IFS", "changes how every unquoted expansion splits"),
    e("CDPATH", "changes where a script's cd goes"),
    e("GLOBIGNORE", "changes what a script's globs match"),
    e("PYTHONSTARTUP", "python runs this file at start"),
    e("PYTHONINSPECT", "drops python into an interactive prompt"),
    e("PERL5OPT", "command-line options injected into every perl"),
    e("PERL5DB", "perl debugger code"),
    e("PERLIO_DEBUG", "perl writes debug output to the named file"),
    e("RUBYOPT", "command-line options injected into every ruby"),
    e("NODE_OPTIONS", "command-line options, including --require, for every node"),
    e("JAVA_TOOL_OPTIONS", "options, including agents, for every JVM"),
    e("_JAVA_OPTIONS", "options, including agents, for every JVM"),
    e("ZDOTDIR", "zsh reads its start-up files from here"),
];

/// Interpreter search paths and start-up settings that are not hooks for
/// every program (so not [`UNSAFE_NAMES`]: a user's PYTHONPATH is ordinary),
/// but that make an interpreter load code from where the caller chose. A
/// program that gets a `[[secret]]` runs without them (rule 6b,
/// `secret.hooks`): a script of Python, Perl, Ruby, Node, Lua or Tcl would
/// otherwise import the caller's module with the secret in its environment.
/// `PYTHONPYCACHEPREFIX` is one too: Python reads its `.pyc` files from that
/// tree, so a planted one runs in place of the module it names.
/// One string of words, not a table: no relocation in libenvshim.so.
pub const SECRET_PATH_HOOKS: &str = "PYTHONPATH PYTHONHOME PYTHONUSERBASE PYTHONPLATLIBDIR \
     PYTHONPYCACHEPREFIX PYTHONBREAKPOINT PYTHONEXECUTABLE PERL5LIB PERLLIB RUBYLIB GEM_PATH GEM_HOME \
     NODE_PATH LUA_PATH LUA_CPATH LUA_INIT TCLLIBPATH CLASSPATH";

/// Whether `name` is one of [`SECRET_PATH_HOOKS`].
pub fn is_secret_path_hook(name: &[u8]) -> bool {
    crate::bytes::words(SECRET_PATH_HOOKS.as_bytes()).any(|w| w == name)
}

/// Names whose values are checked as sudo's `env_check` does: a value with `/` or
/// `%` is stripped (`%` can be a format string, `/` a path to an attacker's file).
/// TZ is special: a zoneinfo name or a path inside /usr/share/zoneinfo is fine.
pub const CHECKED_VALUES: &[Entry] = &[
    e("TERM", "terminfo is looked up by this name"),
    e("COLORTERM", "read by terminal programs"),
    e("LANG", "locale files are looked up by this name"),
    e("LANGUAGE", "message catalogues are looked up by this name"),
    e("LINGUAS", "message catalogues are looked up by this name"),
    e("LC_*", "locale files are looked up by this name"),
    e("TZ", "tzfile is opened by this name"),
];

/// Credential names every policy refuses (unless `credentials.builtin = false`).
/// Matched without regard to ASCII case.
pub const CREDENTIAL_NAMES: &[Entry] = &[
    e("GH_TOKEN", "the gh CLI's token"),
    e("GITHUB_TOKEN", "GitHub Actions and most GitHub tooling"),
    e(
        "GH_ENTERPRISE_TOKEN",
        "the gh CLI's token for GitHub Enterprise",
    ),
    e(
        "GITHUB_ENTERPRISE_TOKEN",
        "the gh CLI's token for GitHub Enterprise",
    ),
    e("*_TOKEN", "the common spelling of an API token"),
    e("*SECRET*", "named a secret"),
    e("*PASSWORD*", "named a password"),
    e("*PASSWD*", "named a password"),
    e("*_API_KEY", "the common spelling of an API key"),
    e("*_APIKEY", "the common spelling of an API key"),
    e("*_PRIVATE_KEY", "a private key in a variable"),
    e("*_ACCESS_KEY", "cloud access keys"),
];

/// The one name a policy may never strip from its own front end: libenvshim.so's
/// preload entry, merged rather than replaced (rule 8).
pub const LD_PRELOAD: &[u8] = b"LD_PRELOAD";
/// The variable that names the policy file.
pub const POLICY_VAR: &[u8] = crate::shared::POLICY.as_bytes();
/// The prefix of the shim's own variables: exempt from the unsafe table.
pub const OWN_PREFIX: &[u8] = crate::shared::PREFIX.as_bytes();
