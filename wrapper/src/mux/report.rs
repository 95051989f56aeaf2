//! What `envwrap mux-env` says about the servers it read: as text, one line per
//! finding, or as one JSON object. Names and ids through `value::word`, never a
//! value.

use super::{removable, who, Chosen, Held, Mapped, Options, Place, Server};
use crate::{procfs, value};
use envpolicy::mux::Governed;
use serde_json::json;

/// How a message names `place` in server `s`.
pub(super) fn place_text(s: &Server, place: &Place) -> String {
    match place {
        Place::Global => s.servers.global_text().to_string(),
        Place::Session { name, .. } => format!("session {}", value::word(name.as_bytes())),
        Place::Pane { id, pid } => format!("pane {id} (pid {pid}, {})", procfs::comm(*pid)),
        Place::ServerProcess { .. } => "the server's own environment".to_string(),
    }
}

/// Say what was removed from, or is held by, each server; with nothing named
/// and nothing found, say that.
pub(super) fn print(servers: &[Server], o: &Options, chosen: &[Chosen], label: &str) {
    for s in servers {
        print_server(s, o, label);
    }
    if servers.is_empty() && !o.quiet && chosen.iter().all(|c| c.named.is_empty()) {
        let kinds: Vec<String> = chosen
            .iter()
            .map(|c| format!("{} {}", c.servers.row().name, c.servers.row().server))
            .collect();
        showln!("no {} found", kinds.join(" or "));
    }
}

fn print_server(s: &Server, o: &Options, label: &str) {
    let head = s.head();
    if let Some(why) = &s.unreadable {
        say!("{}: {head}: not read: {why}", who());
        return;
    }
    for (place, name) in &s.removed {
        say!(
            "{}: {head}: removed {} from {} ({label})",
            who(),
            value::word(name),
            place_text(s, place)
        );
    }
    if o.quiet {
        warn_server_process(s, &head);
        return;
    }
    if let Some(mapped) = s.shim {
        let shim = match mapped {
            Mapped::Replaced => {
                "an older libenvshim.so (replaced on disk since the server started)"
            }
            Mapped::Current => "libenvshim.so",
        };
        let noun = s.servers.row().server;
        match s.governed {
            Governed::Yes => {
                showln!("{head}: runs {shim}, which filters every process it starts")
            }
            Governed::Audit => showln!(
                "{head}: runs {shim} in audit mode, which changes nothing: every process it \
                 starts gets what it holds, so it is treated as a {noun} without envshim"
            ),
            Governed::OtherPolicy | Governed::NoShim => showln!(
                "{head}: runs {shim} on a policy that is not this run's ({label}), or cannot \
                 be proven to be: it is treated as a {noun} without envshim"
            ),
        }
    }
    let shown: Vec<&Held> = s.held.iter().filter(|h| !o.fix || !removable(h)).collect();
    for h in &shown {
        let name = value::word(&h.name);
        let what = match &h.place {
            Place::Pane { .. } => format!("holds {name} ({}): restart the pane", h.why),
            Place::ServerProcess { .. } => format!(
                "holds {name} ({}), which {} get: restart the {} under envshim",
                h.why,
                s.servers.server_process_users(),
                s.servers.row().server,
            ),
            _ => h.what(),
        };
        showln!("{head}: {} {what}", place_text(s, &h.place));
    }
    if shown.is_empty() && s.removed.is_empty() && s.governed != Governed::Yes {
        showln!("{head}: no findings");
    }
}

/// In a client's check (`--quiet --warn-server-environ`): one line naming what the
/// server's own environment holds, which no client can change.
fn warn_server_process(s: &Server, head: &str) {
    let names: Vec<String> = s
        .held
        .iter()
        .filter(|h| matches!(h.place, Place::ServerProcess { .. }) && h.kind != "stale")
        .map(|h| value::word(&h.name))
        .collect();
    if !names.is_empty() {
        say!(
            "{}: {head}: its own environment holds {}, which {} get and \
             no client can remove: restart the {} under envshim",
            who(),
            names.join(", "),
            s.servers.server_process_users(),
            s.servers.row().server,
        );
    }
}

/// Every server as one JSON object: what it holds (where, name, kind, why) and
/// what `--fix` removed, never a value.
pub(super) fn json(servers: &[Server], policy: &str) -> String {
    let list: Vec<_> = servers
        .iter()
        .map(|s| {
            let held: Vec<_> = s
                .held
                .iter()
                .map(|h| {
                    json!({
                        "place": place_json(&h.place),
                        "variable": value::word(&h.name),
                        "kind": h.kind,
                        "why": h.why,
                    })
                })
                .collect();
            let removed: Vec<_> = s
                .removed
                .iter()
                .map(|(p, n)| json!({"place": place_json(p), "variable": value::word(n)}))
                .collect();
            json!({
                "multiplexer": s.servers.row().name,
                "server": value::word(std::os::unix::ffi::OsStrExt::as_bytes(s.id.as_os_str())),
                "pid": s.pid,
                "policed": s.governed == Governed::Yes,
                "shim": match (s.shim, s.governed) {
                    (None, _) => "none",
                    (Some(_), Governed::Yes) => "enforcing",
                    (Some(_), Governed::Audit) => "audit",
                    (Some(_), _) => "other-policy",
                },
                "held": held,
                "removed": removed,
                "unreadable": s.unreadable,
            })
        })
        .collect();
    json!({"policy": policy, "servers": list}).to_string()
}

fn place_json(p: &Place) -> serde_json::Value {
    match p {
        Place::Global => json!({"global": true}),
        Place::Session { id, name } => json!({"session": id, "name": value::word(name.as_bytes())}),
        Place::Pane { id, pid } => json!({"pane": id, "pid": pid}),
        Place::ServerProcess { pid } => json!({"server_process": pid}),
    }
}
