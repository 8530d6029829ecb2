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

/// `lock`, the lock of a project memop made earlier, with what this memop's lock adds that the
/// project needs: a dependency the templates gained since, when the project's `manifest`
/// declares it, and one the `vendored` runtime crates gained (each package of them that `lock`
/// has no version of, taken from this memop's lock, and its name in the entry of the package
/// that depends on it). `memop update` merges `Cargo.toml` and vendors the new runtime, but
/// keeps the project's lock, so without this a new dependency would fail `cargo build
/// --locked` (the project's CI and Dockerfile) until cargo ran once without it. A dependency
/// the user took out of `Cargo.toml` is not added back; what the project's lock has already is
/// left as it is.
pub fn complete(lock: &str, manifest: &str, vendored: &[&str]) -> String {
    let Some(name) = package_name(manifest) else {
        return lock.to_string();
    };
    let (header, mut ours) = blocks(lock);
    let (_, memops) = blocks(&for_project(&name));
    let declared = |dependency: &str| {
        manifest
            .lines()
            .any(|line| line.strip_prefix(dependency).is_some_and(|rest| rest.trim_start().starts_with('=')))
    };
    // The entries whose dependencies this memop's lock decides: the project's own (what its
    // manifest declares of them) and the vendored runtime crates' (all of theirs). Each gets
    // the dependencies it lacks by name.
    let mut wanted: Vec<String> = Vec::new();
    let entries = std::iter::once((name.as_str(), true)).chain(vendored.iter().map(|c| (*c, false)));
    for (package, is_project) in entries {
        let at = |blocks: &[String]| blocks.iter().position(|b| is_root(b, package));
        let (Some(our_entry), Some(memop_entry)) = (at(&ours), at(&memops)) else {
            continue;
        };
        let has: Vec<String> = dependencies(&ours[our_entry]).iter().map(|d| dependency_name(d).to_string()).collect();
        let new: Vec<String> = dependencies(&memops[memop_entry])
            .into_iter()
            .filter(|d| !has.iter().any(|h| h == dependency_name(d)))
            .filter(|d| !is_project || declared(dependency_name(d)))
            .collect();
        wanted.extend(new.iter().map(|d| dependency_name(d).to_string()));
        ours[our_entry] = with_dependencies(&ours[our_entry], &new);
    }
    if wanted.is_empty() {
        return lock.to_string();
    }
    // The packages the new dependencies need that the project's lock has no version of.
    let has = |blocks: &[String], package: &str| blocks.iter().any(|b| block_name(b) == package);
    let mut added: Vec<String> = Vec::new();
    while let Some(package) = wanted.pop() {
        if has(&ours, &package) || added.iter().any(|b| block_name(b) == package) {
            continue;
        }
        let Some(block) = memops.iter().find(|b| block_name(b) == package) else {
            continue;
        };
        wanted.extend(dependencies(block).iter().map(|d| dependency_name(d).to_string()));
        added.push(block.clone());
    }
    // Cargo writes its packages sorted by name (then version, as semver orders it) and checks
    // that order under --locked: each added package, whose name the lock does not have, goes
    // before the first of a greater name; the others keep their places.
    for block in added {
        let at = ours.iter().position(|b| block_name(b) > block_name(&block)).unwrap_or(ours.len());
        ours.insert(at, block);
    }
    format!("{header}\n[[package]]\n{}", ours.join("\n\n[[package]]\n"))
}

/// A lock's header and its `[[package]]` blocks (each without its `[[package]]` line).
fn blocks(lock: &str) -> (&str, Vec<String>) {
    let (header, packages) = lock.split_once("\n[[package]]\n").unwrap_or((lock, ""));
    let blocks = packages.split("\n\n[[package]]\n").map(str::to_string).collect();
    (header, blocks)
}

fn block_name(block: &str) -> &str {
    field(block, "name").unwrap_or_default()
}

fn field<'a>(block: &'a str, key: &str) -> Option<&'a str> {
    block.lines().find_map(|line| line.strip_prefix(key)?.strip_prefix(" = \"")?.strip_suffix('"'))
}

/// Whether `block` is the package `name` of the project's workspace (its own, or a vendored
/// runtime crate): its name, and no source.
fn is_root(block: &str, name: &str) -> bool {
    block_name(block) == name && !block.contains("\nsource = ")
}

/// The entries of a block's `dependencies = [...]`, as written (`"name"` or `"name version"`).
fn dependencies(block: &str) -> Vec<String> {
    let Some((_, list)) = block.split_once("dependencies = [\n") else {
        return Vec::new();
    };
    list.lines()
        .take_while(|line| *line != "]")
        .filter_map(|line| line.trim().strip_prefix('"')?.strip_suffix("\","))
        .map(str::to_string)
        .collect()
}

fn dependency_name(dependency: &str) -> &str {
    dependency.split(' ').next().unwrap_or_default()
}

/// `block` with `more` in its dependencies, sorted as cargo writes them.
fn with_dependencies(block: &str, more: &[String]) -> String {
    if more.is_empty() {
        return block.to_string();
    }
    let mut all = dependencies(block);
    all.extend(more.iter().cloned());
    all.sort();
    let list: String = all.iter().map(|d| format!(" \"{d}\",\n")).collect();
    match block.split_once("dependencies = [\n") {
        Some((before, rest)) => {
            let after = rest.split_once("\n]").map_or("", |(_, after)| after);
            format!("{before}dependencies = [\n{list}]{after}")
        }
        None => format!("{block}\ndependencies = [\n{list}]"),
    }
}

/// The `name` of `[package]` in a manifest.
fn package_name(manifest: &str) -> Option<String> {
    let package = manifest.split_once("[package]\n")?.1;
    let line = package.lines().take_while(|l| !l.starts_with('[')).find(|l| l.starts_with("name"))?;
    Some(line.split_once('=')?.1.trim().trim_matches('"').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNTIME: &[&str] = crate::scaffold::vendor::RUNTIME_CRATES;

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

    /// `lock` as it was before `entry` of its workspace depended on `package`: that package's
    /// block gone, and its name from the entry's dependencies.
    fn before(lock: &str, package: &str, entry: &str) -> String {
        let (header, blocks) = blocks(lock);
        assert!(blocks.iter().any(|b| block_name(b) == package), "{package} is not in the lock");
        let dependency = format!(" \"{package}\",\n");
        let older: Vec<String> = blocks
            .iter()
            .filter(|b| block_name(b) != package)
            .map(|b| if is_root(b, entry) { b.replace(&dependency, "") } else { b.clone() })
            .collect();
        let older = format!("{header}\n[[package]]\n{}", older.join("\n\n[[package]]\n"));
        assert_ne!(older, lock);
        older
    }

    /// A project whose lock predates a dependency the templates gained gets it, with the
    /// packages it needs that the lock lacks, in cargo's order; one that dropped it from its
    /// manifest does not; a lock with everything is left as it is.
    #[test]
    fn a_dependency_the_templates_gained_is_added_to_an_older_lock() {
        let manifest = "[package]\nname = \"my-operator\"\n\n[dependencies]\nanyhow = \"1\"\n";
        let today = for_project("my-operator");
        assert_eq!(complete(&today, manifest, RUNTIME), today, "nothing missing");
        // The lock of before: `anyhow`'s package gone, and its name from the project's entry.
        let older = before(&today, "anyhow", "my-operator");
        assert_eq!(complete(&older, manifest, RUNTIME), today);
        // Taken out of the manifest by the user: not added back.
        let without = "[package]\nname = \"my-operator\"\n\n[dependencies]\n";
        assert_eq!(complete(&older, without, RUNTIME), older);
    }

    /// A project whose lock predates a dependency of the vendored runtime gets it, whatever its
    /// manifest says (the runtime's manifest is memop's).
    #[test]
    fn a_dependency_the_runtime_gained_is_added_to_an_older_lock() {
        let manifest = "[package]\nname = \"my-operator\"\n\n[dependencies]\n";
        let today = for_project("my-operator");
        let older = before(&today, "lz4_flex", "memop-runtime");
        assert_eq!(complete(&older, manifest, RUNTIME), today);
    }

    /// The packages added go where cargo sorts them by name; those of the lock keep their
    /// places, two versions of one package included (0.9 before 0.10, as semver orders them).
    #[test]
    fn a_completed_lock_keeps_its_order() {
        let lock = "version = 4\n\n[[package]]\nname = \"a\"\nversion = \"0.9.0\"\n\n[[package]]\n\
                    name = \"a\"\nversion = \"0.10.0\"\n\n[[package]]\nname = \"my-operator\"\n\
                    version = \"0.1.0\"\ndependencies = [\n \"a 0.9.0\",\n]\n";
        let manifest = "[package]\nname = \"my-operator\"\n\n[dependencies]\nmimalloc = \"0.1\"\n";
        let completed = complete(lock, manifest, RUNTIME);
        let all = names(&completed);
        assert!(all.contains(&"mimalloc".to_string()) && all.contains(&"libmimalloc-sys".to_string()), "{all:?}");
        let mut sorted = all.clone();
        sorted.sort();
        assert_eq!(all, sorted);
        let versions: Vec<&str> = completed.lines().filter(|l| l.starts_with("version = \"0.")).collect();
        assert_eq!(versions[..2], ["version = \"0.9.0\"", "version = \"0.10.0\""]);
        assert!(completed.contains("dependencies = [\n \"a 0.9.0\",\n \"mimalloc\",\n]"), "{completed}");
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
