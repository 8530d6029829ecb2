//! The `Cargo.lock` of a new project: exactly the dependency set memop's own CI built and
//! tested (`templates/_lock/Cargo.lock`, the lock of `examples/memcached-operator`), so a user
//! builds what was tested and `cargo build --locked` works straight away.
//!
//! Refresh it with `scripts/refresh-lock.sh`.

/// The lock, recorded for the example project.
const LOCK: &str = include_str!("../../templates/_lock/Cargo.lock");
use crate::embedded::EXAMPLE;

/// The lock for a project whose package is named `name`.
///
/// Cargo keeps packages sorted by name, and checks that order under `--locked`, so the
/// project's own entry moves to where its name sorts.
pub fn for_project(name: &str) -> String {
    let (header, packages) = LOCK.split_once("\n[[package]]\n").unwrap_or((LOCK, ""));
    let mut blocks: Vec<String> = packages.split("\n\n[[package]]\n").map(str::to_string).collect();
    let own = format!("name = \"{EXAMPLE}\"\nversion = ");
    if let Some(at) = blocks.iter().position(|b| b.starts_with(&own) && !b.contains("\nsource = ")) {
        let block = blocks.remove(at);
        let renamed = block.replacen(&format!("name = \"{EXAMPLE}\""), &format!("name = \"{name}\""), 1);
        let key = |b: &str| b.lines().next().unwrap_or_default().to_string();
        let new_key = key(&renamed);
        let at = blocks.iter().position(|b| key(b) > new_key).unwrap_or(blocks.len());
        blocks.insert(at, renamed);
    }
    let body = blocks.join("\n\n[[package]]\n");
    format!("{header}\n[[package]]\n{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(lock: &str) -> Vec<String> {
        lock.lines().filter_map(|l| l.strip_prefix("name = \"")).map(|l| l.trim_end_matches('"').to_string()).collect()
    }

    #[test]
    fn the_example_lock_is_unchanged_for_the_example() {
        assert_eq!(for_project(EXAMPLE), LOCK);
    }

    #[test]
    fn the_own_package_is_renamed_and_sorted() {
        for name in ["aaa-operator", "zzz-operator", "my-operator"] {
            let lock = for_project(name);
            let all = names(&lock);
            assert!(all.contains(&name.to_string()));
            assert!(!all.contains(&EXAMPLE.to_string()));
            let mut sorted = all.clone();
            sorted.sort();
            assert_eq!(all, sorted, "{name}");
            assert_eq!(lock.len(), LOCK.len() + name.len() - EXAMPLE.len());
        }
    }

    /// The lock must list exactly the dependencies of the generated Cargo.toml, or every
    /// generated project fails `--locked` (refresh with `scripts/refresh-lock.sh`).
    #[test]
    fn the_lock_matches_the_generated_manifest() {
        let wanted = crate::scaffold::dependencies();
        let root = LOCK.split("\n\n[[package]]\n").find(|b| b.contains(&format!("name = \"{EXAMPLE}\""))).unwrap();
        let mut locked: Vec<&str> =
            root.lines().filter_map(|l| l.trim().strip_prefix('"')?.split(['"', ' ']).next()).collect();
        locked.sort();
        assert_eq!(locked, wanted, "templates/_lock/Cargo.lock is stale: run scripts/refresh-lock.sh");
    }
}
