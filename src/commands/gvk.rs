//! The flags that name an API (`--group`, `--version`, `--kind`), shared by `create api` and
//! `create webhook`, and parsed into [`ApiNames`] in one place.

use anyhow::Result;

use crate::names::{Domain, Group, Kind, Plural, Version};
use crate::project::Project;
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
}
