//! kubebuilder's `--plugins`, answered with what memop does: memop has one layout, with the
//! parts kubebuilder adds by plugin built in, so a plugin is either what memop does anyway
//! (accepted, with a note saying so) or something it has not (refused, saying what instead).
//!
//! A key is kubebuilder's: `name/version` or its full form `name.kubebuilder.io/version`
//! (`deploy-image.go.kubebuilder.io/v1-alpha`), and only the versions memop answers for are
//! taken: `helm/v3` is no `helm/v2-alpha`, and saying so beats a chart of the wrong plugin.

use anyhow::{Result, bail};

/// Where a plugin is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Init,
    CreateApi {
        image: bool,
    },
    /// `edit`, which takes helm/v2-alpha.
    Edit,
}

/// The plugins memop answers for, by name, and the version of each (kubebuilder's current one).
const KNOWN: &[(&str, &str)] = &[
    ("go", "v4"),
    ("base", "v4"),
    ("kustomize", "v2"),
    ("kustomize.common", "v2"),
    ("deploy-image", "v1-alpha"),
    ("grafana", "v1-alpha"),
    ("helm", "v2-alpha"),
    ("autoupdate", "v1-alpha"),
];

/// The list of [`KNOWN`] as a refusal names it.
const SUPPORTED: &str =
    "go/v4, kustomize/v2, deploy-image/v1-alpha, grafana/v1-alpha, helm/v2-alpha and autoupdate/v1-alpha";

/// The name of `plugin`'s key (`helm` for `helm.kubebuilder.io/v2-alpha`) and its version, if
/// it gives one.
fn parse(plugin: &str) -> (&str, Option<&str>) {
    let (name, version) = match plugin.split_once('/') {
        Some((name, version)) => (name, Some(version)),
        None => (plugin, None),
    };
    (name.trim_end_matches(".go.kubebuilder.io").trim_end_matches(".kubebuilder.io"), version)
}

/// Whether `plugin` is the Helm chart plugin memop has (`helm/v2-alpha`, in any of its spellings).
pub fn is_helm(plugin: &str) -> bool {
    matches!(parse(plugin.trim()), ("helm", Some("v2-alpha") | None))
}

/// Whether `plugin` is the update workflow plugin (`autoupdate/v1-alpha`, in any of its spellings).
pub fn is_autoupdate(plugin: &str) -> bool {
    matches!(parse(plugin.trim()), ("autoupdate", Some("v1-alpha") | None))
}

/// Refuses a plugin key memop does not know, or a version of a known plugin that it does not
/// answer for.
fn check_known(plugin: &str) -> Result<&str> {
    let (name, version) = parse(plugin);
    let Some((_, supported)) = KNOWN.iter().find(|(known, _)| *known == name) else {
        bail!(
            "--plugins {plugin} is not a plugin memop knows; memop answers kubebuilder's {SUPPORTED} (it has one \
             layout, with their parts built in), so leave --plugins out"
        );
    };
    match version {
        Some(version) if version != *supported => bail!(
            "--plugins {plugin}: memop has {name}/{supported}, not {name}/{version}; the plugins it answers are \
             kubebuilder's {SUPPORTED}"
        ),
        _ => Ok(name),
    }
}

/// The notes for `plugins` given to `command`, or the refusal of one memop cannot honour.
pub fn answer(command: Command, plugins: &[String]) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for plugin in plugins.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        match (check_known(plugin)?, command) {
            ("go" | "base" | "kustomize" | "kustomize.common", _) => notes.push(format!(
                "--plugins {plugin}: memop always scaffolds its one layout (Rust, with kustomize's config/), \
                 which follows go/v4's"
            )),
            ("deploy-image", Command::CreateApi { image: true }) => notes.push(format!(
                "--plugins {plugin}: a kind with --image gets memop's operand controller, which is \
                 deploy-image's; the plugin is not needed"
            )),
            ("deploy-image", Command::CreateApi { image: false }) => bail!(
                "--plugins {plugin} deploys an image: give it with --image (and --image-container-port, \
                 --image-container-command, --run-as-user), as kubebuilder's deploy-image takes them; \
                 memop needs no plugin for it"
            ),
            ("deploy-image", Command::Init | Command::Edit) => bail!(
                "--plugins {plugin} belongs to `create api`: run `memop create api --image IMG ...` for \
                 the kind that deploys it"
            ),
            ("grafana", _) => notes.push(format!(
                "--plugins {plugin}: every memop project has grafana/ dashboards of the manager's \
                 metrics already"
            )),
            // `edit` makes the chart; its caller looks for the plugin in the list.
            ("helm", Command::Edit) => {}
            ("helm", _) => bail!(
                "--plugins {plugin} makes a Helm chart of an existing project: run `memop edit \
                 --plugins=helm/v2-alpha` once the project has its APIs (later `create api` runs update the chart)"
            ),
            ("autoupdate", Command::Edit) => {}
            ("autoupdate", _) => bail!(
                "--plugins {plugin} adds a scheduled workflow that runs `memop update`: run `memop edit \
                 --plugins=autoupdate/v1-alpha --memop-git URL` in the project"
            ),
            _ => unreachable!("check_known passes only the plugins of KNOWN"),
        }
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugins(list: &[&str]) -> Vec<String> {
        list.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn what_memop_does_anyway_is_accepted_with_a_note() {
        let notes =
            answer(Command::Init, &plugins(&["go.kubebuilder.io/v4", "grafana.kubebuilder.io/v1-alpha"])).unwrap();
        assert_eq!(notes.len(), 2);
        assert!(notes[0].contains("follows go/v4's") && notes[1].contains("grafana/ dashboards"), "{notes:?}");
        let image = Command::CreateApi { image: true };
        assert!(answer(image, &plugins(&["deploy-image/v1-alpha"])).unwrap()[0].contains("operand controller"));
        assert!(answer(Command::Init, &[]).unwrap().is_empty());
    }

    #[test]
    fn what_memop_cannot_honour_is_refused_with_what_to_do() {
        let refused = |command, plugin: &str| answer(command, &plugins(&[plugin])).unwrap_err().to_string();
        assert!(refused(Command::Init, "helm/v2-alpha").contains("memop edit --plugins=helm/v2-alpha"));
        assert!(answer(Command::Edit, &plugins(&["helm.kubebuilder.io/v2-alpha"])).unwrap().is_empty());
        assert!(refused(Command::CreateApi { image: false }, "deploy-image/v1-alpha").contains("--image"));
        assert!(refused(Command::Init, "deploy-image/v1-alpha").contains("memop create api --image"));
        assert!(refused(Command::Init, "kotlin/v1").contains("leave --plugins out"));
    }

    #[test]
    fn versions_memop_does_not_answer_for_are_refused() {
        let refused = |command, plugin: &str| answer(command, &plugins(&[plugin])).unwrap_err().to_string();
        for plugin in ["helm/v3", "helm/v1-alpha", "helm.kubebuilder.io/v1-alpha"] {
            let err = refused(Command::Edit, plugin);
            assert!(err.contains("memop has helm/v2-alpha, not helm/"), "{plugin}: {err}");
            assert!(err.contains(SUPPORTED), "{err}");
            assert!(!is_helm(plugin), "{plugin}");
        }
        assert!(refused(Command::Init, "go/v3").contains("memop has go/v4, not go/v3"));
        assert!(refused(Command::Edit, "helmfile/v1").contains("not a plugin memop knows"));
        for plugin in ["helm/v2-alpha", "helm.kubebuilder.io/v2-alpha", "helm"] {
            assert!(is_helm(plugin), "{plugin}");
        }
        for plugin in ["autoupdate/v1-alpha", "autoupdate.kubebuilder.io/v1-alpha", "autoupdate"] {
            assert!(is_autoupdate(plugin) && !is_helm(plugin), "{plugin}");
            assert!(answer(Command::Edit, &plugins(&[plugin])).unwrap().is_empty());
            assert!(refused(Command::Init, plugin).contains("memop edit --plugins=autoupdate/v1-alpha"));
        }
        assert!(refused(Command::Edit, "autoupdate/v1").contains("memop has autoupdate/v1-alpha, not autoupdate/v1"));
        assert!(
            answer(Command::Init, &plugins(&["kustomize.common.kubebuilder.io/v2", "base.go.kubebuilder.io/v4"]))
                .is_ok()
        );
    }
}
