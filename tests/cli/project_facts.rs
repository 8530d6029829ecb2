//! PROJECT records the operator, not the history of the commands that made it: the license
//! header is the project's `hack/boilerplate.rs.txt`, which every command reads, and the lists
//! commands extend at their markers (modules, `register` calls, routes, conversions) are
//! sorted, a function of PROJECT alone. A PROJECT of an earlier memop, which recorded years and
//! orders for replay, is read once and loses them at its next update.

use super::common::{commit, git};
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

/// The memop command `line`, run in 2027's January.
fn ok_in_2027(dir: &Path, line: &str) {
    memop(dir, line).env("SOURCE_DATE_EPOCH", "1800000000").assert().success();
}

/// `dir`, committed as it is: the base of an update.
fn committed(dir: &Path) {
    git(dir, &["init", "-q"]);
    commit(dir, "made by memop");
}

/// Webhooks made in either order give the same webhook server, and PROJECT records no order:
/// an update has nothing to do.
#[test]
fn the_webhooks_order_is_a_function_of_project() {
    let mut servers = Vec::new();
    for kinds in [["web --kind Nginx", "cache --kind Memcached"], ["cache --kind Memcached", "web --kind Nginx"]] {
        let (_tmp, dir) = project(&[MEMCACHED, NGINX]);
        for kind in kinds {
            ok(&dir, &format!("create webhook --group {kind} --programmatic-validation"));
        }
        let project = read(&dir, "PROJECT");
        assert!(!project.contains("Order") && !project.contains("year"), "{project}");
        committed(&dir);
        let before = snapshot(&dir);
        let out = ok(&dir, "update");
        assert!(out.stdout.starts_with("Nothing to do"), "{}{}", out.stdout, out.stderr);
        assert_unchanged(&dir, &before, "an update of a project with two kinds' webhooks");
        servers.push(read(&dir, "src/webhook/mod.rs"));
    }
    assert!(servers[0].contains("memcached::routes,\n        nginx::routes,\n"), "{}", servers[0]);
    assert_eq!(servers[0], servers[1], "the same server, whichever webhook came first");
}

/// A named controller made after another kind's controller takes its place in the sorted lists,
/// which an update leaves as they are.
#[test]
fn the_controllers_order_is_a_function_of_project() {
    let (_tmp, dir) = project(&[MEMCACHED, NGINX]);
    ok(&dir, &format!("create api {MEMCACHED} --resource=false --controller=true --controller-name memcached-audit"));
    let project = read(&dir, "PROJECT");
    assert!(!project.contains("controllerOrder"), "{project}");
    let modules = read(&dir, "src/controller/mod.rs");
    assert!(modules.contains("pub mod memcached;\n\npub mod memcached_audit;\n\npub mod nginx;\n"), "{modules}");
    let main = read(&dir, "src/main.rs");
    let (audit, nginx) = (main.find("memcached_audit::register").unwrap(), main.find("nginx::register").unwrap());
    assert!(audit < nginx, "{main}");
    committed(&dir);
    let before = snapshot(&dir);
    let out = ok(&dir, "update");
    assert!(out.stdout.starts_with("Nothing to do"), "{}{}", out.stdout, out.stderr);
    assert_unchanged(&dir, &before, "an update of a project with a named controller");
}

/// Every file memop writes has the project's header, read from `hack/boilerplate.rs.txt`: a
/// command of a later year writes the header of the project's year, and the header the user
/// writes into that file is the one of the next files memop makes.
#[test]
fn every_command_writes_the_projects_header() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let header = read(&dir, "hack/boilerplate.rs.txt");
    assert!(header.starts_with("// Copyright 2026 The proj Authors.\n"), "{header}");
    assert!(read(&dir, "src/main.rs").starts_with(&format!("{header}\n")));
    ok_in_2027(&dir, &format!("create api {NGINX}"));
    assert!(read(&dir, "src/controller/nginx.rs").starts_with(&format!("{header}\n")));
    committed(&dir);
    let before = snapshot(&dir);
    let out = update_in(&dir, 2028);
    assert!(out.stdout.starts_with("Nothing to do"), "{}{}", out.stdout, out.stderr);
    assert_unchanged(&dir, &before, "an update in a later year");
    let ours = header.replacen("Copyright 2026 The proj Authors.", "Copyright 2026-2028 Ann.", 1);
    fs::write(dir.join("hack/boilerplate.rs.txt"), &ours).unwrap();
    ok(&dir, "create api --group batch --kind Ledger");
    assert!(read(&dir, "src/controller/ledger.rs").starts_with(&format!("{ours}\n")));
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

/// A PROJECT of an earlier memop, which recorded the years and orders of its commands and had
/// no header file: an update in a later year reads its year once, writes the header file of
/// that year, drops the history from PROJECT and changes nothing else.
#[test]
fn the_history_of_an_earlier_project_is_read_once_and_dropped() {
    let (_tmp, dir) = project(&[MEMCACHED, NGINX]);
    ok(&dir, "create webhook --group web --kind Nginx --programmatic-validation");
    ok(&dir, "create webhook --group cache --kind Memcached --defaulting");
    let (project, header) = (read(&dir, "PROJECT"), read(&dir, "hack/boilerplate.rs.txt"));
    // As memop 0.3 wrote it: the history, and no header file.
    let history = "webhookOrder:\n- web/v1alpha1 Nginx\n- cache/v1alpha1 Memcached\nyear: 2026\n";
    let earlier = project.replace("    webhookVersion: v1\n", "    webhookVersion: v1\n    year: 2026\n");
    fs::write(dir.join("PROJECT"), format!("{earlier}{history}")).unwrap();
    fs::remove_file(dir.join("hack/boilerplate.rs.txt")).unwrap();
    let sum = read(&dir, "PROJECT.sum");
    let sum: String = sum.lines().filter(|l| !l.starts_with("hack/")).map(|l| format!("{l}\n")).collect();
    fs::write(dir.join("PROJECT.sum"), sum).unwrap();
    committed(&dir);
    let before = snapshot(&dir);
    let out = update_in(&dir, 2028);
    assert_eq!(read(&dir, "PROJECT"), project, "{}{}", out.stdout, out.stderr);
    assert_eq!(read(&dir, "hack/boilerplate.rs.txt"), header, "the header of the project's year");
    let after = snapshot(&dir);
    let mut files = changed(&before, &after);
    files.retain(|path| !path.starts_with(".git"));
    let expected = ["PROJECT", "PROJECT.sum", "hack/boilerplate.rs.txt"].map(PathBuf::from);
    assert_eq!(files, expected, "{}", out.stdout);
}
