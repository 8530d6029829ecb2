//! The flags that name an API (`--group`, `--version`, `--kind`), shared by `create api` and
//! `create webhook`, and parsed into [`ApiNames`] in one place.

use anyhow::Result;

use crate::names::{Domain, Group, Kind, Plural, Version};
use crate::project::{Project, Resource};
use crate::resource::ApiNames;

#[derive(Debug, Clone, clap::Args)]
pub struct GvkArgs {
    /// API group, without the domain: `cache` gives cache.<domain>
    #[arg(long)]
    pub group: String,

    /// API version
    #[arg(long, default_value = "v1alpha1")]
    pub version: String,

    /// Kind, in PascalCase
    #[arg(long)]
    pub kind: String,
}

impl GvkArgs {
    /// The API these flags name in `project`. Its plural is `plural` when given, else the one
    /// its kind already has in another version (all versions of a kind share one CRD), else
    /// kubebuilder's plural of the kind.
    pub fn names(&self, project: &Project, plural: Option<&str>) -> Result<ApiNames> {
        let domain = Domain::parse(&project.domain)?;
        let kind = Kind::parse(&self.kind)?;
        let group = Group::parse(&self.group, &domain)?;
        let version = Version::parse(&self.version)?;
        let sibling = project
            .resources
            .iter()
            .find(|r| r.names.group == group && r.names.kind == kind && r.names.version != version && r.api.is_some());
        let plural = match (plural, sibling) {
            (Some(p), _) => Plural::parse(p)?,
            (None, Some(sibling)) => sibling.names.plural.clone(),
            (None, None) => Plural::for_kind(&kind)?,
        };
        Ok(ApiNames::new(group, version, kind, plural, &domain))
    }

    /// PROJECT's entry of the kind these flags name when it is not the project's own: another
    /// project's (its group whole, `cert-manager.io`, or split, `cert-manager`), or Kubernetes'
    /// (in kubebuilder's spelling of its group, or the full API group). `None` for the
    /// project's own kinds, which [`GvkArgs::names`] names.
    pub fn theirs<'a>(&self, project: &'a Project) -> Option<&'a Resource> {
        let builtin = crate::names::builtin::group(&self.group);
        project.resources.iter().find(|r| {
            let n = &r.names;
            let group = match (n.external, n.builtin) {
                (true, _) => n.qualified_group == self.group || n.group.as_str() == self.group,
                (_, true) => builtin.is_some_and(|g| g == n.group.as_str()),
                _ => false,
            };
            group && n.version.as_str() == self.version && n.kind.as_str() == self.kind
        })
    }
}
