//! PROJECT is the whole truth of what `memop update` replays: the year each command wrote its
//! files in, the order the webhooks and named controllers were made in, the chart's directory.
//! An edit of the files they were once read from changes nothing memop replays; a PROJECT of an
//! earlier memop, which did not record them, is completed from the files once.

use super::common::{blob_id, commit, git};
use super::*;

/// An update run in `year`'s January.
fn update_in(dir: &Path, year: i64) -> Output {
    let epoch = match year {
        2027 => "1800000000",
        2028 => "1830000000",
        _ => unreachable!("no epoch for {year}"),
    };
    let out = memop(dir, "update").env("SOURCE_DATE_EPOCH", epoch).assert().success().get_output().clone();
    Output { stdout: String::from_utf8(out.stdout).unwrap(), stderr: String::from_utf8(out.stderr).unwrap() }
}

/// The memop command `line`, run in `year`'s January.
fn ok_in(dir: &Path, line: &str, year: i64) {
    let epoch = if year == 2027 { "1800000000" } else { unreachable!() };
    memop(dir, line).env("SOURCE_DATE_EPOCH", epoch).assert().success();
}

/// `dir`, committed as it is: the base of an update.
fn committed(dir: &Path) {
    git(dir, &["init", "-q"]);
    commit(dir, "made by memop");
}

/// Swaps the lines `a` and `b` of `path` (each once in it), as a user sorting them would.
fn swap_lines(dir: &Path, path: &str, a: &str, b: &str) {
    let text = read(dir, path);
    assert!(text.contains(a) && text.contains(b), "{path} lacks {a:?} or {b:?}:\n{text}");
    fs::write(dir.join(path), text.replace(a, "\u{0}").replace(b, a).replace('\u{0}', b)).unwrap();
}

/// Webhooks made in another order than their APIs: PROJECT records it, so a user who sorts the
/// webhook server's routes changes nothing memop writes (memop once read the order back from
/// that file, and took the user's order for its own text).
#[test]
fn the_webhooks_order_is_projects_not_the_servers() {
    let (_tmp, dir) = project(&[MEMCACHED, NGINX]);
    ok(&dir, "create webhook --group web --kind Nginx --programmatic-validation");
    ok(&dir, "create webhook --group cache --kind Memcached --defaulting");
    let project = read(&dir, "PROJECT");
    assert!(project.contains("webhookOrder:\n- web/v1alpha1 Nginx\n- cache/v1alpha1 Memcached\n"), "{project}");
    let server = "src/webhook/mod.rs";
    let memops = read(&dir, server);
    committed(&dir);
    swap_lines(&dir, server, "router.merge(nginx::routes())", "router.merge(memcached::routes())");
    commit(&dir, "routes sorted");
    let before = snapshot(&dir);
    let out = ok(&dir, "update");
    assert!(out.stdout.starts_with("Nothing to do"), "{}{}", out.stdout, out.stderr);
    assert_unchanged(&dir, &before, "an update of a project whose webhook server the user sorted");
    // memop's text is still its own order, as PROJECT.sum records it.
    assert!(read(&dir, "PROJECT.sum").contains(&format!("{server} {}\n", blob_id(&memops))));
}

/// A named controller made after another kind's controller: PROJECT records the order, so the
/// module list sorted by the user changes nothing memop writes.
#[test]
fn the_controllers_order_is_projects_not_the_module_lists() {
    let (_tmp, dir) = project(&[MEMCACHED, NGINX]);
    ok(&dir, &format!("create api {MEMCACHED} --resource=false --controller=true --controller-name memcached-audit"));
    let project = read(&dir, "PROJECT");
    assert!(project.contains("controllerOrder:\n- memcached\n- nginx\n- memcached_audit\n"), "{project}");
    let modules = "src/controller/mod.rs";
    let memops = read(&dir, modules);
    committed(&dir);
    swap_lines(&dir, modules, "pub mod nginx;", "pub mod memcached_audit;");
    commit(&dir, "modules sorted");
    let before = snapshot(&dir);
    let out = ok(&dir, "update");
    assert!(out.stdout.starts_with("Nothing to do"), "{}{}", out.stdout, out.stderr);
    assert_unchanged(&dir, &before, "an update of a project whose controller modules the user sorted");
    assert!(read(&dir, "PROJECT.sum").contains(&format!("{modules} {}\n", blob_id(&memops))));
}

/// A named controller made right after its kind's: PROJECT's order, which it leaves implicit.
#[test]
fn the_controllers_order_is_implicit_where_it_is_projects() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, &format!("create api {MEMCACHED} --resource=false --controller=true --controller-name memcached-audit"));
    ok(&dir, &format!("create api {NGINX}"));
    assert!(!read(&dir, "PROJECT").contains("controllerOrder"), "{}", read(&dir, "PROJECT"));
    let out = ok(&dir, "update");
    assert!(out.stdout.starts_with("Nothing to do"), "{}{}", out.stdout, out.stderr);
}

/// The year of a file's license header is the year of the command that made it, which PROJECT
/// records: an update in a later year leaves it, even where the user changed the header's year
/// (memop once read the year back from the header, and then wrote its own year over the user's).
#[test]
fn a_files_year_is_the_commands_that_made_it() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    // Nginx's files are made a year later than the project's.
    ok_in(&dir, &format!("create api {NGINX}"), 2027);
    let project = read(&dir, "PROJECT");
    assert!(project.contains("\nyear: 2026\n"), "{project}");
    assert!(project.contains("  kind: Nginx\n") && project.contains("  year: 2027\n"), "{project}");
    assert!(read(&dir, "src/controller/nginx.rs").starts_with("// Copyright 2027 "));
    committed(&dir);
    // The user keeps the headers of memop's files current.
    for path in ["src/main.rs", "src/lib.rs"] {
        let text = read(&dir, path);
        assert!(text.starts_with("// Copyright 2026 "), "{path}:\n{text}");
        fs::write(dir.join(path), text.replacen("// Copyright 2026 ", "// Copyright 2026-2028 ", 1)).unwrap();
    }
    commit(&dir, "headers of 2028");
    let before = snapshot(&dir);
    let out = update_in(&dir, 2028);
    assert!(out.stdout.starts_with("Nothing to do"), "{}{}", out.stdout, out.stderr);
    assert_unchanged(&dir, &before, "an update in a later year");
}

/// A chart in a directory of the user's choice: PROJECT records it, and `update` renders the chart
/// there.
#[test]
fn update_finds_the_chart_where_project_records_it() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, "edit --plugins=helm/v2-alpha --output-dir deploy/helm");
    assert!(read(&dir, "PROJECT").contains("output: deploy/helm\n"), "{}", read(&dir, "PROJECT"));
    committed(&dir);
    let helpers = "deploy/helm/chart/templates/_helpers.tpl";
    fs::remove_file(dir.join(helpers)).unwrap();
    commit(&dir, "lost a file of the chart");
    // A file of memop's chart the user deleted stays deleted, with a note: update looked there.
    let out = ok(&dir, "update");
    assert!(out.stderr.contains(&format!("{helpers} is gone")), "{}{}", out.stdout, out.stderr);
    assert!(!dir.join("dist").exists(), "no chart in the default directory");
}

/// A PROJECT of an earlier memop, which recorded no years nor orders: the first update reads
/// them from the files once and records them in PROJECT, changing nothing else; from then on
/// PROJECT is the truth.
#[test]
fn a_project_without_the_facts_is_completed_once() {
    let (_tmp, dir) = project(&[MEMCACHED, NGINX]);
    ok(&dir, "create webhook --group web --kind Nginx --programmatic-validation");
    ok_in(&dir, "create webhook --group cache --kind Memcached --defaulting", 2027);
    let recorded = read(&dir, "PROJECT");
    assert!(recorded.contains("webhookOrder:\n- web/v1alpha1 Nginx\n- cache/v1alpha1 Memcached\n"), "{recorded}");
    assert!(recorded.contains("    year: 2027\n"), "the webhooks' year: {recorded}");
    // As an earlier memop wrote PROJECT: none of them.
    let earlier: String = {
        let mut lines = recorded.lines().peekable();
        let mut out = String::new();
        while let Some(line) = lines.next() {
            if line.starts_with("webhookOrder:") {
                while lines.peek().is_some_and(|l| l.starts_with("- ")) {
                    lines.next();
                }
                continue;
            }
            if line.trim_start().starts_with("year: ") {
                continue;
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    };
    assert_ne!(earlier, recorded);
    fs::write(dir.join("PROJECT"), &earlier).unwrap();
    committed(&dir);
    let before = snapshot(&dir);
    let out = update_in(&dir, 2028);
    assert_eq!(read(&dir, "PROJECT"), recorded, "{}{}", out.stdout, out.stderr);
    let after = snapshot(&dir);
    assert_eq!(changed(&before, &after), [PathBuf::from("PROJECT")], "only PROJECT: {}", out.stdout);
    commit(&dir, "memop update");
    // Recorded now: the server the user sorts changes nothing.
    swap_lines(&dir, "src/webhook/mod.rs", "router.merge(nginx::routes())", "router.merge(memcached::routes())");
    commit(&dir, "routes sorted");
    let before = snapshot(&dir);
    let again = update_in(&dir, 2028);
    assert!(again.stdout.starts_with("Nothing to do"), "{}{}", again.stdout, again.stderr);
    assert_unchanged(&dir, &before, "a second update");
}

/// A kind's conversion webhook made in one year and its admission webhooks in the next: each
/// keeps its year, and the webhook server the one of the first `create webhook` (replay makes
/// the admission webhooks first, whichever came first).
#[test]
fn a_kinds_webhooks_keep_the_years_of_their_commands() {
    let (_tmp, dir) = project(&[MEMCACHED, "--group cache --version v1 --kind Memcached --storage-version"]);
    ok(&dir, "create webhook --group cache --version v1 --kind Memcached --conversion");
    ok_in(&dir, "create webhook --group cache --version v1 --kind Memcached --defaulting", 2027);
    let project = read(&dir, "PROJECT");
    assert!(project.contains("    webhookVersion: v1\n    year: 2027\n"), "{project}");
    assert!(read(&dir, "src/webhook/mod.rs").starts_with("// Copyright 2026 "));
    assert!(read(&dir, "src/webhook/memcached.rs").starts_with("// Copyright 2027 "));
    committed(&dir);
    let before = snapshot(&dir);
    let out = update_in(&dir, 2028);
    assert!(out.stdout.starts_with("Nothing to do"), "{}{}", out.stdout, out.stderr);
    // Not even a note that memop writes your webhook's file otherwise now.
    assert_eq!(out.stderr, "");
    assert_unchanged(&dir, &before, "an update in a later year");
}
