//! One API of a project with its names validated once, and every spelling memop derives from
//! them (module, file and role names): what kubebuilder's `resource.Resource` is to its
//! scaffolds. Built from flags by `create api`, and from each `PROJECT` entry wherever the other
//! APIs matter (conflicts, the merged role), so no code re-parses names from strings.

use anyhow::Result;

use crate::names::{Domain, Group, Kind, Plural, Version};
use crate::project;

#[derive(Clone, Debug)]
pub struct ApiNames {
    pub group: Group,
    pub version: Version,
    pub kind: Kind,
    pub plural: Plural,
    /// `<group>.<domain>`: the API group in CRDs and `apiVersion`.
    pub qualified_group: String,
}

impl ApiNames {
    pub fn new(group: Group, version: Version, kind: Kind, plural: Plural, domain: &Domain) -> Self {
        let qualified_group = group.qualified(domain);
        Self { group, version, kind, plural, qualified_group }
    }

    /// The names of an API that `PROJECT` records (its plural only when irregular).
    pub fn of(resource: &project::Resource, domain: &Domain) -> Result<Self> {
        let kind = Kind::parse(&resource.kind)?;
        let plural = match &resource.plural {
            Some(p) => Plural::parse(p)?,
            None => Plural::for_kind(&kind)?,
        };
        Ok(Self::new(Group::parse(&resource.group, domain)?, Version::parse(&resource.version)?, kind, plural, domain))
    }

    /// Every API `PROJECT` records.
    pub fn all(project: &project::Project) -> Result<Vec<Self>> {
        let domain = Domain::parse(&project.domain)?;
        project.resources.iter().map(|r| Self::of(r, &domain)).collect()
    }

    /// Whether this is the API of `group`, `version` and `kind` (as strings, from flags).
    pub fn is(&self, group: &str, version: &str, kind: &str) -> bool {
        self.group.as_str() == group && self.version.as_str() == version && self.kind.as_str() == kind
    }

    /// `src/api/<group_module>/`: the group with `-` and `.` as `_`.
    pub fn group_module(&self) -> String {
        self.group.module_name()
    }

    /// `config/rbac/<role_prefix>_{admin,editor,viewer}_role.yaml`.
    pub fn role_prefix(&self) -> String {
        format!("{}_{}", self.group_module(), self.kind.snake())
    }

    /// `config/crd/bases/<crd_file>.yaml`.
    pub fn crd_file(&self) -> String {
        format!("{}_{}", self.qualified_group, self.plural)
    }

    /// `config/samples/<sample_file>.yaml`.
    pub fn sample_file(&self) -> String {
        format!("{}_{}_{}", self.group.as_str(), self.version, self.kind.lower())
    }

    /// The names of the files this kind's webhooks add beside other kinds' files:
    /// `tests/<kind>_webhook.rs` with admission webhooks; `tests/<kind>_conversion.rs` and
    /// `src/api/<group>/<spoke>/<kind>_conversion.rs` with conversion. No kind may be named so.
    pub fn webhook_file_names(&self, admission: bool, conversion: bool) -> Vec<String> {
        [(admission, "webhook"), (conversion, "conversion")]
            .into_iter()
            .filter(|(has, _)| *has)
            .map(|(_, suffix)| format!("{}_{suffix}", self.kind.snake()))
            .collect()
    }
}
