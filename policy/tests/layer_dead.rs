//! `layer::dead_rules`: the rules of a user policy that a managed layer makes
//! dead (docs/adr/0020-managed-layer.md), which `envwrap check` reports and
//! the front ends mention once at run time.

mod common;
use common::*;
use envpolicy_core::layer::{dead_rules, Dead};

const MANAGED: &str = r#"version = 1
strip = ["CORP_*"]

[credentials]
names = ["DEPLOY_KEY"]

[[grant]]
name = "DEPLOY_KEY"
program = "deploy"
"#;

fn dead(user: &str) -> Vec<Dead> {
    let u = compile(user);
    let m = compile(MANAGED);
    let mut out = Vec::new();
    dead_rules(&u.policy(), &m.policy(), |d| out.push(d));
    out
}

#[test]
fn a_user_rule_the_managed_layer_forbids_is_dead() {
    let d = dead(
        r#"version = 1
mode = "audit"
keep = ["CORP_URL", "HOME"]
set = { CORP_MODE = "lax", EDITOR = "vi" }

[[grant]]
name = "DEPLOY_KEY"
program = "ssh"

[[grant]]
name = "DEPLOY_KEY"
program = "deploy"
"#,
    );
    assert!(d.contains(&Dead::Mode), "audit under enforce");
    let keeps = d.iter().filter(|x| matches!(x, Dead::Keep { .. })).count();
    assert_eq!(keeps, 1, "the keep of CORP_URL, not of HOME");
    let sets = d.iter().filter(|x| matches!(x, Dead::Set { .. })).count();
    assert_eq!(sets, 1, "the set of CORP_MODE, not of EDITOR");
    let grants: Vec<u32> = d
        .iter()
        .filter_map(|x| match x {
            Dead::Grant { grant, .. } => Some(*grant),
            _ => None,
        })
        .collect();
    assert_eq!(
        grants,
        vec![0],
        "the grant to ssh, not the one the managed layer also makes"
    );
}

#[test]
fn a_user_policy_within_the_managed_layer_has_no_dead_rule() {
    let d = dead("version = 1\nkeep = [\"HOME\"]\nstrip = [\"CORP_*\"]\n");
    assert!(d.is_empty(), "{d:?}");
}
