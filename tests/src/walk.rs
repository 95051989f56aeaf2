//! The files under some directories, for the harness's readers of the tree
//! (the artifacts' freshness, the module graphs, the docs' references).

use std::path::{Path, PathBuf};

/// Every file under `roots` (a root that is a file is itself), with its
/// metadata, descending into the directories `descend` accepts; symbolic links
/// are not followed. Sorted by path.
pub fn files_under(
    roots: Vec<PathBuf>,
    descend: impl Fn(&Path) -> bool,
) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    let mut visit = roots;
    while let Some(path) = visit.pop() {
        let Ok(md) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !md.is_dir() {
            out.push((path, md));
        } else if descend(&path) {
            if let Ok(entries) = std::fs::read_dir(&path) {
                visit.extend(entries.flatten().map(|e| e.path()));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
