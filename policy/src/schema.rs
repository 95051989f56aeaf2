//! The policy file as written: the TOML schema, deserialised with serde.
//!
//! Every table denies unknown keys, so a misspelt key is an error with its
//! file:line:column rather than a silently ignored setting. Positions of the
//! values that the compiler checks further are kept (`Spanned`), so those errors
//! carry a position too. docs/policy.md is the reference for every key.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// Format version; only `1` exists.
    pub version: Spanned<i64>,
    #[serde(default)]
    pub mode: Option<ModeName>,
    #[serde(default)]
    pub base: Option<BaseName>,
    #[serde(default)]
    pub keep: Vec<Spanned<String>>,
    #[serde(default)]
    pub strip: Vec<Spanned<String>>,
    #[serde(default)]
    pub set: BTreeMap<String, Spanned<String>>,
    #[serde(default, rename = "unsafe")]
    pub unsafe_names: Option<UnsafeName>,
    #[serde(default)]
    pub sticky: Option<bool>,
    #[serde(default)]
    pub self_scrub: Option<bool>,
    /// Say nothing of the credentials withheld from children (default false).
    #[serde(default)]
    pub quiet: Option<bool>,
    /// `envwrap` masks credential values in every command's output, as
    /// `--mask` does (default false).
    #[serde(default)]
    pub mask: Option<bool>,
    #[serde(default)]
    pub log: Option<Spanned<String>>,
    #[serde(default)]
    pub credentials: Credentials,
    #[serde(default)]
    pub argv: Argv,
    #[serde(default)]
    pub import: Imports,
    #[serde(default)]
    pub supervise: Supervise,
    #[serde(default)]
    pub grant: Vec<Grant>,
    #[serde(default)]
    pub secret: Vec<Secret>,
    #[serde(default)]
    pub program: BTreeMap<String, Program>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ModeName {
    Enforce,
    Audit,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BaseName {
    None,
    Floor,
    All,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum UnsafeName {
    Strip,
    Keep,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// Include the built-in credential names (default true).
    #[serde(default)]
    pub builtin: Option<bool>,
    #[serde(default)]
    pub names: Vec<Spanned<String>>,
    /// `true` (every shape, the default), `false`, or a list of shape ids.
    #[serde(default)]
    pub shapes: Option<Spanned<Shapes>>,
    #[serde(default)]
    pub min_value_len: Option<u32>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(untagged)]
pub enum Shapes {
    All(bool),
    Some(Vec<String>),
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SecretsName {
    Refuse,
    Redact,
    Allow,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Argv {
    #[serde(default)]
    pub secrets: Option<SecretsName>,
    #[serde(default)]
    pub env_flags: Option<bool>,
}

/// `[supervise]`: `envwrap --supervise` (docs/adr/0016).
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Supervise {
    #[serde(default)]
    pub changes: Option<SuperviseChangesName>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SuperviseChangesName {
    Refuse,
    Audit,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Imports {
    #[serde(default)]
    pub env_file: Vec<EnvFileImport>,
    #[serde(default)]
    pub config: Vec<ConfigImport>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RoleName {
    Strip,
    Refuse,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvFileImport {
    pub path: Spanned<String>,
    #[serde(default)]
    pub role: Option<RoleName>,
    /// Kept names declared in the file take their value from it (default false).
    #[serde(default)]
    pub values: Option<bool>,
    /// A missing file is an error (default false: a warning, names stay unknown).
    #[serde(default)]
    pub required: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigImport {
    pub path: Spanned<String>,
    #[serde(default)]
    pub key_suffixes: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    pub required: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    pub name: Spanned<String>,
    pub program: Spanned<String>,
}

/// A `[[secret]]`: a variable whose value is read from `from` at the exec of a
/// program `program` matches, and never held above it
/// (docs/adr/0019-secrets-delivered-at-exec.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Secret {
    pub name: Spanned<String>,
    pub from: Spanned<String>,
    pub program: Spanned<String>,
    #[serde(default)]
    pub deny_args: Vec<Spanned<Vec<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// Basenames, or path globs when they contain `/`; default: the section name.
    #[serde(default, rename = "match")]
    pub matches: Vec<Spanned<String>>,
    #[serde(default)]
    pub keep: Vec<Spanned<String>>,
    #[serde(default)]
    pub strip: Vec<Spanned<String>>,
    #[serde(default)]
    pub set: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub self_scrub: Option<bool>,
    #[serde(default)]
    pub pairs: Option<Pairs>,
}

/// How `NAME=VALUE` pairs in this program's argv are judged.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pairs {
    #[serde(default)]
    pub base: Option<BaseName>,
    #[serde(default)]
    pub keep: Vec<Spanned<String>>,
    #[serde(default)]
    pub strip: Vec<Spanned<String>>,
}
