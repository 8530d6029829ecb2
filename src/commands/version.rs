//! `memop version`: what kubebuilder's prints (its version, the commit and date it was built
//! from, the Kubernetes release it targets), with the versions of kube and of the runtime crates
//! that the projects it generates use.

/// The report, one fact a line.
pub fn text() -> String {
    let version = env!("CARGO_PKG_VERSION");
    // The manifest every generated project starts from: what its projects depend on.
    let manifest = crate::scaffold::project_manifest();
    let requirement = |name: &str| {
        manifest
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name} = ")))
            .and_then(|rest| rest.split('"').nth(1))
            .unwrap_or("unknown")
            .to_string()
    };
    // k8s-openapi's v1_XX feature: the oldest Kubernetes release the projects support, and the
    // release of the envtest control plane their tests run on (the tests below check both agree).
    let kubernetes = manifest
        .split("\"v1_")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map_or("unknown".to_string(), |minor| format!("1.{minor}"));
    format!(
        "memop {version}\n  commit:      {} ({})\n  kubernetes:  {kubernetes} (k8s-openapi {})\n  kube:        {}\n  runtime:     memop-runtime {version}, memop-test {version} (in each project's vendor/)\n",
        env!("MEMOP_COMMIT"),
        env!("MEMOP_COMMIT_DATE"),
        requirement("k8s-openapi"),
        requirement("kube"),
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn read(path: &str) -> String {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
    }

    /// The Kubernetes release of the envtest control plane that `scripts/envtest/build.sh`
    /// builds (`1.37.2`): the one version setting the others follow.
    fn control_plane() -> String {
        read("scripts/envtest/k8s/go.mod")
            .lines()
            .find_map(|line| line.strip_prefix("require k8s.io/kubernetes v"))
            .expect("scripts/envtest/k8s/go.mod requires k8s.io/kubernetes")
            .trim()
            .to_string()
    }

    /// `1.37.2` -> `37`.
    fn minor(release: &str) -> &str {
        release.split('.').nth(1).expect("a MAJOR.MINOR.PATCH release")
    }

    #[test]
    fn the_report_names_the_versions_projects_use() {
        let text = super::text();
        let kubernetes = format!("1.{}", minor(&control_plane()));
        assert!(text.starts_with(&format!("memop {}\n", env!("CARGO_PKG_VERSION"))), "{text}");
        assert!(text.contains(&format!("  kubernetes:  {kubernetes} (k8s-openapi 0.29.0)\n")), "{text}");
        assert!(text.contains("  kube:        5.0.0\n"), "{text}");
    }

    /// The Kubernetes version is written in several files that cargo, make and the docs read
    /// separately; they all follow `scripts/envtest/k8s/go.mod` (the control plane the tests
    /// run on), whose minor is k8s-openapi's feature and setup-envtest's release.
    #[test]
    fn every_kubernetes_version_follows_the_envtest_control_plane() {
        let release = control_plane();
        let minor = minor(&release);
        let feature = format!("\"v1_{minor}\"");
        for manifest in [
            "Cargo.toml",
            "crates/memop-runtime/Cargo.toml",
            "crates/memop-test/Cargo.toml",
            "templates/init/Cargo.toml.tera",
        ] {
            let text = read(manifest);
            let lines: Vec<&str> = text.lines().filter(|line| line.starts_with("k8s-openapi = ")).collect();
            assert!(!lines.is_empty(), "{manifest} depends on k8s-openapi");
            // The runtime's own dependency enables no version (a library leaves it to the
            // binary); every other k8s-openapi line enables this one.
            let versioned: Vec<&&str> = lines.iter().filter(|line| line.contains("\"v1_")).collect();
            assert!(!versioned.is_empty(), "{manifest} enables a Kubernetes version of k8s-openapi");
            for line in versioned {
                assert!(line.contains(&feature), "{manifest}: {line} (the control plane is {release})");
            }
        }
        // setup-envtest's release for generated projects: the same minor, any patch it publishes.
        let makefile = read("templates/init/Makefile.tera");
        let envtest = makefile
            .lines()
            .find_map(|line| line.strip_prefix("ENVTEST_K8S_VERSION ?= "))
            .expect("the Makefile sets ENVTEST_K8S_VERSION");
        assert!(envtest.starts_with(&format!("1.{minor}.")), "ENVTEST_K8S_VERSION {envtest}, control plane {release}");
        // What the docs tell a reader to type.
        let docs = ["README.md", "crates/memop-runtime/README.md", "docs/architecture.md", "docs/getting-started.md"];
        for doc in docs {
            let text = read(doc);
            for (pattern, expected) in [
                ("K8S_OPENAPI_ENABLED_VERSION=", format!("1.{minor}")),
                ("kubebuilder-envtest/k8s/", format!("{release}-linux")),
                ("bin/k8s/", format!("{envtest}-linux")),
                ("`v1_", format!("{minor}`")),
            ] {
                for (at, _) in text.match_indices(pattern) {
                    let rest = &text[at + pattern.len()..];
                    assert!(
                        rest.starts_with(&expected),
                        "{doc}: {pattern}{}…, expected {pattern}{expected}",
                        rest.chars().take(expected.len()).collect::<String>()
                    );
                }
            }
        }
        assert!(
            read("README.md").contains(&format!("kubebuilder-envtest/k8s/{release}-linux")),
            "README names the directory"
        );
    }
}
