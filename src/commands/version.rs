//! `memop version`: what kubebuilder's prints (its version, the commit and date it was built
//! from, the Kubernetes release it targets), with the versions of kube and of the runtime crates
//! that the projects it generates use.

/// The manifest every generated project starts from: what its projects depend on.
const MANIFEST: &str = include_str!("../../templates/init/Cargo.toml.tera");

/// The report, one fact a line.
pub fn text() -> String {
    let version = env!("CARGO_PKG_VERSION");
    let requirement = |name: &str| {
        MANIFEST
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name} = ")))
            .and_then(|rest| rest.split('"').nth(1))
            .unwrap_or("unknown")
            .to_string()
    };
    // k8s-openapi's v1_XX feature: the oldest Kubernetes release the projects support.
    let kubernetes = MANIFEST
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
    #[test]
    fn the_report_names_the_versions_projects_use() {
        let text = super::text();
        assert!(text.starts_with(&format!("memop {}\n", env!("CARGO_PKG_VERSION"))), "{text}");
        assert!(text.contains("  kubernetes:  1.33 (k8s-openapi 0.29.0)\n"), "{text}");
        assert!(text.contains("  kube:        5.0.0\n"), "{text}");
    }
}
