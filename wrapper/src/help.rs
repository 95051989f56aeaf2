//! The `--help` texts. docs/man/envwrap.1 says the same things at more length;
//! change both together.

/// `envwrap --help`.
pub const RUN: &str = "\
Usage: envwrap [OPTION]... [-] [NAME=VALUE]... [--] [COMMAND [ARG]...]
       envwrap check [--json] [[--policy] POLICY]
       envwrap explain [OPTION]... [-- COMMAND [ARG]...]
       envwrap scan [--pid N]... [--all] [-L NAME | -S PATH]... [--policy FILE] [--json]
       envwrap doctor [--json] PROGRAM
       envwrap mux-env [--fix] [--mux NAME [--server SERVER]... | -L NAME | -S PATH]...
                       [--policy FILE] [--json]
       envwrap compile [--output FILE] POLICY

Run COMMAND the way env(1) does, with the environment and arguments an envshim
policy allows: the policy decides which variables COMMAND receives (kept,
stripped, refused as credentials, or set) and refuses to run it when a secret
sits in its arguments. What envwrap strips is absent from the whole process tree
below it.

env(1) options:
  -i, --ignore-environment   start with an empty environment (a lone '-' too)
  -u, --unset=NAME           remove NAME from the environment
  -C, --chdir=DIR            change the working directory to DIR first
  -S, --split-string=STRING  split STRING into arguments, as for a #! line
  -0, --null                 without COMMAND: end each entry with NUL, not newline
  -v, --debug                say each step on stderr (names and arguments, as
                             shown in messages: never a credential's value)
      --default-signal[=SIGS]
                             reset SIGS (names or numbers, comma-separated;
                             without: every signal) to their default handling
      --ignore-signal[=SIGS] ignore SIGS in COMMAND
      --block-signal[=SIGS]  block SIGS in COMMAND
      --list-signal-handling say on stderr which signals COMMAND starts with
                             ignored or blocked
  NAME=VALUE                 set NAME; the policy judges it like any other
                             variable, so a credential given this way is refused
Without COMMAND, print the environment a child would get under the policy (for
no program in particular), one entry a line, as env(1) prints its own.

Policy options:
      --policy=FILE          the policy file (default: see Policy lookup)
      --mode=MODE            'audit': report what the policy would change and
                             change nothing; 'enforce': apply it (default: the
                             policy's own mode)
      --log=FILE             append every change to FILE as a JSON line (default:
                             the policy's log)
      --json                 write warnings to stderr as JSON lines
      --preload              put libenvshim.so (installed beside envwrap) into
                             COMMAND's LD_PRELOAD and ENVSHIM_POLICY into its
                             environment, so the programs it starts are policed too
      --no-preload           never do that (default: do it when libenvshim.so is
                             beside envwrap and COMMAND is dynamically linked)
      --supervise            judge every exec of COMMAND's whole tree, static and
                             Go programs and raw system calls included (seccomp
                             user notification): an exec the policy refuses, or
                             would change (unless the policy says [supervise]
                             changes = \"audit\"), fails with EPERM and a
                             message. An exec the preloaded shim already
                             judged with the same policy is not judged again. As
                             a user who is not root this sets no_new_privs, so
                             setuid programs (sudo) lose their privileges there
      --judge-all            with --supervise: judge the execs the shim already
                             judged too (slower; see docs/threat-model.md)
  -h, --help                 show this help
      --version              show the version
      --generate=KIND        print a shell completion script: complete-bash,
                             complete-zsh or complete-fish

Options stop at the first argument that is not one. Long options may be
shortened to any unambiguous prefix. To run a program named like a tool (check,
explain, scan, doctor, mux-env, tmux-env, compile), put '--' before it.

Tools ('envwrap TOOL --help' shows a tool's options):
  check [POLICY]    validate a policy: each error as FILE:LINE:COLUMN, or a
                    summary of what it keeps, strips, refuses and sets
  explain           each variable's decision and rule, and each argument of
                    COMMAND that would change, for the current environment or an
                    env file; values show as <N bytes, SHAPE>, never in full
  scan              find leaks in live processes: credential values or token
                    shapes in their arguments, refused variables or stale
                    passthrough values in their environments
  doctor PROGRAM    say whether libenvshim.so can police PROGRAM, or only envwrap
                    can (static, Go, setuid or setgid, file capabilities, ELF
                    class)
  mux-env           find what tmux servers and screen sessions hold that the
                    policy would not pass to a new pane or window, and remove
                    it with --fix (also 'tmux-env')
  compile POLICY    compile a policy into the cache libenvshim.so maps (the shim
                    runs this itself when its cache is missing or stale)

Policy lookup (the first that applies): --policy FILE; $ENVSHIM_POLICY
(':builtin' names the built-in default);
$XDG_CONFIG_HOME/envshim/policy.toml (~/.config when XDG_CONFIG_HOME is unset);
/etc/envshim/policy.toml; the built-in default, which inherits everything,
refuses credentials by name and by the shape of their values, and refuses
secrets in argv.

In a #! line (the kernel passes everything after the interpreter as one
argument, which -S splits):
  #!/usr/local/bin/envwrap -S --policy /etc/envshim/loop.toml -- /bin/sh

Exit status:
  125  envwrap failed: a bad option or operand, a bad policy, a bad -S string,
       a -C directory it cannot enter; with --supervise, also when the
       supervisor ended before COMMAND did (COMMAND's own status is lost)
  126  COMMAND cannot be executed, or the policy refused to run it (the message
       names the variable or token shape and the program)
  127  COMMAND was not found
  else the exit status of COMMAND

Messages name variables, programs and rules, never values.
See envwrap(1) and envshim.toml(5).
";

/// `envwrap check --help`.
pub const CHECK: &str = "\
Usage: envwrap check [--json] [[--policy] POLICY]

Validate a policy file, given as an operand or with --policy, as explain and
scan take it. Without POLICY, check the one the policy lookup finds
(see 'envwrap --help'). Each error is printed as FILE:LINE:COLUMN: MESSAGE and
the exit status is 125. A valid policy gets a short summary of what it keeps,
strips, refuses and sets, and exit status 0; warnings (an import that could not
be read) are printed before it.

  --policy POLICY  the policy to check (the same as the operand)
  --json           print the summary as one JSON object
  -h, --help       show this help
";

/// `envwrap compile --help`.
pub const COMPILE: &str = "\
Usage: envwrap compile [--output FILE] POLICY

Compile POLICY into the cache that libenvshim.so maps, and say where it went.
libenvshim.so runs this itself when a policy's cache is missing or stale, so
there is rarely a need to; run it to check that a policy compiles where the
shim will read it, or to write a compiled policy somewhere else.

The default FILE is the policy's cache path: $ENVSHIM_CACHE_DIR when it is an
absolute path, else /run/user/UID/envshim when that directory is the user's,
else /tmp/envshim-UID, under a name hashed from the policy's absolute path.
A policy that does not compile is reported as FILE:LINE:COLUMN: MESSAGE, and a
failure marker is written in its place, so that processes enforce the
fail-closed floor until the policy is fixed.

  -o, --output FILE  write the compiled policy to FILE
  -h, --help         show this help

Exit status: 0 when the policy compiled and was written; 125 when it does not
compile, cannot be read, or cannot be written.
";

/// `envwrap explain --help`.
pub const EXPLAIN: &str = "\
Usage: envwrap explain [OPTION]... [-- COMMAND [ARG]...]

Show what the policy decides for one exec, and run nothing: every variable of
the environment with its decision (kept, stripped, refused, set or granted) and
the rule that decided it, then every argument of COMMAND that would change, and
why. Values never appear: a value shows as its length and the token shape it
has, for example <40 bytes, github token>.

As the run would: the LD_PRELOAD and ENVSHIM_POLICY entries envwrap adds when
it puts libenvshim.so into COMMAND are rows too; a COMMAND that is not found
(exit 127) or cannot be executed (126) is said; and for a program that passes
NAME=VALUE pairs on (env, sudo, tmux, docker, ...), each pair the policy drops
is named as a variable the program it starts will not get.

  --policy=FILE     the policy (default: the policy lookup of 'envwrap --help')
  --program=NAME    decide for this program (default: COMMAND; with neither,
                    no [program.*] section applies)
  --env-file=FILE   take the environment from FILE (env-file syntax, see
                    envshim.toml(5)) instead of envwrap's own
  --json            print one JSON object
  -h, --help        show this help

Exit status: 0; 125 for a bad option, env file or policy.
";

/// `envwrap scan --help`.
pub const SCAN: &str = "\
Usage: envwrap scan [--pid N]... [--all] [-L NAME | -S PATH]... [--policy FILE]
                    [--json]

Find leaks that exist now, in live processes, from /proc/PID/cmdline and
/proc/PID/environ where they can be read. It reports:
  - a process whose arguments hold the value of a credential (from scan's own
    environment and from the env files the policy imports) or a token shape;
  - a process whose environment holds a variable the policy refuses;
  - a process whose environment holds a passthrough variable (kept by name and
    read from an env file imported with values = true) whose value differs from
    the file's value today: the drift check to run after changing a policy;
  - a tmux server whose global or session environment holds a variable the
    policy strips or refuses, or a stale passthrough value: every new pane
    would get it ('envwrap mux-env --fix' removes it). The servers are this
    user's (the sockets in ${TMUX_TMPDIR:-/tmp}/tmux-UID/), and those -L and -S
    name;
  - a GNU screen session whose server's environment (as setenv left it) holds
    such a variable: every new window would get it (without --pid, -L or -S).
Each finding names the PID, the program and the variable, never the value. A
process that vanishes or cannot be read is skipped; scan says how many were
skipped, and why.

  --pid=N          scan process N (repeatable)
  --all            scan every process (the default)
  -L, --socket-name=NAME
                   scan the tmux server of 'tmux -L NAME' and the processes it
                   started (its panes and what they run) instead of every
                   process; with --pid or --all, read that server besides
  -S, --socket-path=PATH
                   the same for the tmux server listening on PATH
  --policy=FILE    the policy (default: the policy lookup of 'envwrap --help')
  --json           print each finding, then a summary, as JSON lines
  -h, --help       show this help

Exit status: 0 when nothing was found; 1 when something was; 125 for a bad
option or policy, or when a process named with --pid could not be read in full
(it vanished, or its environment is not readable): such a process cannot be
called clean.
";

/// `envwrap mux-env --help` (also `envwrap tmux-env --help`).
pub const MUX: &str = "\
Usage: envwrap mux-env [--fix] [--mux NAME [--server SERVER]... | -L NAME | -S PATH]...
                       [--policy FILE] [--json]
       envwrap tmux-env ...   (the same tool)

A terminal multiplexer's server (tmux, GNU screen) gives every pane or window it
opens, and every command it runs (tmux's run-shell, if-shell, pipe-pane), its own
environment, not the client's. This reads the servers of every multiplexer it
knows (tmux: every socket in ${TMUX_TMPDIR:-/tmp}/tmux-UID/; screen: every
session screen -ls lists), or the ones the options name, and reports:
  - each variable there that the policy strips or refuses (a server started
    without envshim by a shell that held credentials holds them all);
  - each passthrough variable whose value differs from its env file's today;
  - tmux: each pane whose process holds such a variable (only a restart of the
    pane removes it), and each such variable in the server's own process
    environment, which tmux gives to pipe-pane commands and no client can
    change (only a restart of the server removes it);
  - screen: the server's environment as setenv and unsetenv left it (where the
    server keeps it, not only /proc/PID/environ).
A server that runs libenvshim.so filters every process it starts; it is said
so. Each finding names the server, the session or pane, and the variable,
never the value. libenvshim.so and envwrap run 'envwrap mux-env --fix
--skip-policed --quiet' themselves before a client's command that may start a
process in a running server.

  --mux=NAME              read NAME's servers only: tmux or screen (repeatable)
  --server=SERVER         of the --mux before it, only this server: a tmux
                          socket's path; a screen session (PID.NAME, PID, NAME
                          or a prefix of NAME, as screen -S matches; empty:
                          every session of this user)
  --program=PROGRAM       the client of the --mux before it to run (default:
                          its name, from PATH)
  -L, --socket-name=NAME  the tmux server of 'tmux -L NAME'
  -S, --socket-path=PATH  the tmux server listening on PATH
      --fix               remove the variables it reports from the servers
                          (tmux: set-environment -u, globally and per session;
                          screen: -X unsetenv), and say what it removed (panes
                          and stale values are reported only)
      --skip-policed      leave alone a server that runs libenvshim.so (what is
                          always done: such a server is no finding)
      --warn-server-environ
                          with --quiet, still warn about the server's own
                          environment (for a client that runs pipe-pane)
  -q, --quiet             print only what --fix removed, and errors
      --tmux=PROGRAM      the same as --mux tmux --program PROGRAM
      --screen=SESSION    the same as --mux screen --server SESSION
      --screen-program=PROGRAM
                          the same as --mux screen --program PROGRAM
      --policy=FILE       the policy (default: the policy lookup of
                          'envwrap --help')
      --json              print one JSON object
  -h, --help              show this help

Exit status: 0 when nothing is left to report; 1 when something is (a server
that did not answer included); 125 for a bad option or policy.
";

/// `envwrap doctor --help`.
pub const DOCTOR: &str = "\
Usage: envwrap doctor [--json] PROGRAM

Read PROGRAM's file (an ELF binary, or a #! script and its interpreter) and say
which front end can police it: libenvshim.so, which must be loaded by the
dynamic loader into the program, or only envwrap, which applies the policy
before the program starts. It reports:
  - dynamically or statically linked, and the interpreter (dynamic loader);
  - setuid and setgid bits, and file capabilities (the loader ignores
    LD_PRELOAD for them);
  - a Go binary (Go starts programs with raw system calls, not through libc);
  - an ELF class or machine that differs from libenvshim.so's.
PROGRAM without '/' is looked up in PATH.

  --json       print one JSON object
  -h, --help   show this help

Exit status: 0; 125 for a bad option or a file that cannot be read or parsed;
127 when PROGRAM is not found.
";
