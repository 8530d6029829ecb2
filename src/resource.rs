//! One API of a project with its names validated once, and every spelling memop derives from
//! them (module, file, role and webhook names): what kubebuilder's `resource.Resource` is to its
//! scaffolds. `create api` builds it from flags; every `PROJECT` entry holds one
//! ([`crate::project::Resource`]), so no code re-parses names from strings.
//!
//! Serialized, it is the API part of a template's context: each spelling below under its own
//! name (`kind_snake`, `crd_file`, `mutate_path`, ...), so templates and commands share one
//! source for every derived name.

use anyhow::Result;
use serde::Serialize;

use crate::names::{Domain, Group, Kind, Plural, Version};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiNames {
    pub domain: Domain,
    pub group: Group,
    pub version: Version,
    pub kind: Kind,
    pub plural: Plural,
    /// `<group>.<domain>`: the API group in CRDs and `apiVersion` (for a kind of Kubernetes'
    /// own, its API group: `""` for core, `apps`, `networking.k8s.io`).
    pub qualified_group: String,
    /// A kind of Kubernetes' own, k8s-openapi's type (`names::builtin`): the project defines no
    /// type nor CRD for it (PROJECT's `core: true`).
    pub builtin: bool,
    /// A kind of another project's, from its CRD (`names::external`): the project keeps the CRD
    /// in `config/external-crds/` and kopium's types in `src/external/` (PROJECT's `external: true`).
    pub external: bool,
}

impl ApiNames {
    pub fn new(group: Group, version: Version, kind: Kind, plural: Plural, domain: &Domain) -> Self {
        let qualified_group = group.qualified(domain);
        Self { domain: domain.clone(), group, version, kind, plural, qualified_group, builtin: false, external: false }
    }

    /// The names of a kind of Kubernetes' own.
    pub fn builtin(kind: &crate::names::builtin::BuiltinKind) -> Self {
        let (domain, group, version, kind_name, plural) = kind.names();
        let qualified_group = kind.api_group();
        Self { domain, group, version, kind: kind_name, plural, qualified_group, builtin: true, external: false }
    }

    /// The names of the kind of another project's of the API group `qualified_group`
    /// (`cert-manager.io`), as its CRD has them (see `names::external::names`).
    pub fn external(qualified_group: &str, version: &str, kind: &str, plural: &str) -> Result<Self> {
        let (domain, group, version, kind, plural) =
            crate::names::external::names(qualified_group, version, kind, plural)?;
        let qualified_group = qualified_group.to_string();
        Ok(Self { domain, group, version, kind, plural, qualified_group, builtin: false, external: true })
    }

    /// Where the project keeps an external kind's CRD: `config/external-crds/<group>_<plural>.yaml`.
    pub fn external_crd_path(&self) -> String {
        format!("{}/{}.yaml", crate::names::external::CRD_DIR, self.crd_file())
    }

    /// An external kind's Rust types, kopium's: `src/external/<kind>.rs`.
    pub fn external_types_path(&self) -> String {
        format!("src/external/{}.rs", self.kind.snake())
    }

    /// The entry of `names::builtin` of a kind of Kubernetes' own.
    pub fn builtin_kind(&self) -> Option<&'static crate::names::builtin::BuiltinKind> {
        let found = crate::names::builtin::find(self.group.as_str(), self.version.as_str(), self.kind.as_str());
        found.ok().filter(|_| self.builtin)
    }

    /// Parses the names as `PROJECT` records them (the plural only when irregular).
    pub fn parse(group: &str, version: &str, kind: &str, plural: Option<&str>, domain: &str) -> Result<Self> {
        let domain = Domain::parse(domain)?;
        let kind = Kind::parse(kind)?;
        let plural = match plural {
            Some(p) => Plural::parse(p)?,
            None => Plural::for_kind(&kind)?,
        };
        Ok(Self::new(Group::parse(group, &domain)?, Version::parse(version)?, kind, plural, &domain))
    }

    /// The same kind in another version (a version of one CRD shares its group, kind and plural).
    pub fn in_version(&self, version: Version) -> Self {
        Self { version, ..self.clone() }
    }

    /// Whether `other` is the same group, version and kind.
    pub fn same_gvk(&self, other: &ApiNames) -> bool {
        self.builtin == other.builtin
            && self.external == other.external
            && self.group == other.group
            && self.version == other.version
            && self.kind == other.kind
    }

    /// Whether `other` is another version of the same kind of the same group.
    pub fn same_kind(&self, other: &ApiNames) -> bool {
        self.builtin == other.builtin
            && self.external == other.external
            && self.group == other.group
            && self.kind == other.kind
    }

    /// `cache/v1alpha1, Kind=Memcached`, as kubebuilder names an API in its messages.
    pub fn gvk(&self) -> String {
        // Another project's group is named whole (`cert-manager.io`): it is not `<group>.<domain>`.
        let group = if self.external { &self.qualified_group } else { self.group.as_str() };
        format!("{group}/{}, Kind={}", self.version, self.kind)
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

    /// The CRD's name: `<plural>.<group>.<domain>`.
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.qualified_group)
    }

    /// `config/crd/patches/<crd_patch_file>.yaml`, the patch that turns on the conversion webhook.
    pub fn crd_patch_file(&self) -> String {
        format!("webhook_in_{}", self.crd_file())
    }

    /// `config/samples/<sample_file>.yaml`.
    pub fn sample_file(&self) -> String {
        format!("{}_{}_{}", self.group.as_str(), self.version, self.kind.lower())
    }

    /// The kind's Rust types: `src/api/<group>/<version>/<kind>.rs`.
    pub fn types_path(&self) -> String {
        format!("src/api/{}/{}/{}.rs", self.group_module(), self.version.module_name(), self.kind.snake())
    }

    /// The kind's controller: `src/controller/<kind>.rs`.
    pub fn controller_path(&self) -> String {
        format!("src/controller/{}.rs", self.kind.snake())
    }

    /// The kind's admission webhooks: `src/webhook/<kind>.rs`.
    pub fn webhook_path(&self) -> String {
        format!("src/webhook/{}.rs", self.kind.snake())
    }

    /// The conversion of this version to and from its hub: `src/api/<group>/<version>/<kind>_conversion.rs`.
    pub fn conversion_path(&self) -> String {
        format!("src/api/{}/{}/{}_conversion.rs", self.group_module(), self.version.module_name(), self.kind.snake())
    }

    /// The path of the defaulting webhook, as kubebuilder spells it.
    pub fn mutate_path(&self) -> String {
        format!("/mutate-{}-{}-{}", self.qualified_group.replace('.', "-"), self.version, self.kind.lower())
    }

    /// The path of the validating webhook, as kubebuilder spells it.
    pub fn validate_path(&self) -> String {
        format!("/validate-{}-{}-{}", self.qualified_group.replace('.', "-"), self.version, self.kind.lower())
    }

    /// The defaulting (`mutating`) or validating webhook's name in its configuration:
    /// `mmemcached-v1alpha1.cache.example.com`. The API server wants a name of at least three
    /// DNS labels, which a kind of Kubernetes' own spells with kubebuilder's group and the
    /// project's domain (`mpod-v1.core.example.com`): its API group may be `""` or `apps`.
    pub fn webhook_name(&self, mutating: bool, project_domain: &str) -> String {
        let prefix = if mutating { 'm' } else { 'v' };
        match self.builtin {
            true => format!("{prefix}{}-{}.{}.{project_domain}", self.kind.lower(), self.version, self.group),
            false => format!("{prefix}{}-{}.{}", self.kind.lower(), self.version, self.qualified_group),
        }
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

/// What a template sees of an API: every spelling, by name.
#[derive(Serialize)]
struct Spellings<'a> {
    group: &'a str,
    version: &'a str,
    kind: &'a str,
    plural: &'a str,
    singular: String,
    kind_snake: String,
    kind_kebab: String,
    kind_screaming: String,
    port_name: String,
    qualified_group: &'a str,
    group_module: String,
    crd_file: String,
    crd_patch_file: String,
    sample_file: String,
    role_prefix: String,
    mutate_path: String,
    validate_path: String,
    /// A kind of Kubernetes' own: its Rust type (`k8s_openapi::api::apps::v1::Deployment`).
    rust_path: Option<String>,
    /// Its `apiVersion`: `apps/v1`, `v1` for core; for an external kind, `<group>/<version>`.
    api_version: Option<String>,
    builtin: bool,
    external: bool,
}

impl Serialize for ApiNames {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Spellings {
            group: self.group.as_str(),
            version: self.version.as_str(),
            kind: self.kind.as_str(),
            plural: self.plural.as_str(),
            singular: self.kind.lower(),
            kind_snake: self.kind.snake(),
            kind_kebab: self.kind.kebab(),
            kind_screaming: self.kind.screaming(),
            port_name: self.kind.port_name(),
            qualified_group: &self.qualified_group,
            group_module: self.group_module(),
            crd_file: self.crd_file(),
            crd_patch_file: self.crd_patch_file(),
            sample_file: self.sample_file(),
            role_prefix: self.role_prefix(),
            mutate_path: self.mutate_path(),
            validate_path: self.validate_path(),
            rust_path: self.builtin_kind().map(|k| k.rust_path()),
            api_version: match self.builtin_kind() {
                Some(kind) => Some(kind.api_version()),
                None => self.external.then(|| format!("{}/{}", self.qualified_group, self.version)),
            },
            builtin: self.builtin,
            external: self.external,
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memcached() -> ApiNames {
        ApiNames::parse("cache", "v1alpha1", "Memcached", None, "example.com").unwrap()
    }

    #[test]
    fn spellings_are_kubebuilders() {
        let api = memcached();
        assert_eq!(api.crd_file(), "cache.example.com_memcacheds");
        assert_eq!(api.crd_name(), "memcacheds.cache.example.com");
        assert_eq!(api.sample_file(), "cache_v1alpha1_memcached");
        assert_eq!(api.types_path(), "src/api/cache/v1alpha1/memcached.rs");
        assert_eq!(api.mutate_path(), "/mutate-cache-example-com-v1alpha1-memcached");
        assert_eq!(api.webhook_name(false, "ignored.com"), "vmemcached-v1alpha1.cache.example.com");
        let pod = ApiNames::builtin(crate::names::builtin::find("core", "v1", "Pod").unwrap());
        assert_eq!(pod.mutate_path(), "/mutate--v1-pod", "kubebuilder's path for the core group");
        assert_eq!(pod.webhook_name(true, "example.com"), "mpod-v1.core.example.com");
        let ingress = ApiNames::builtin(crate::names::builtin::find("networking", "v1", "Ingress").unwrap());
        assert_eq!(ingress.validate_path(), "/validate-networking-k8s-io-v1-ingress");
        assert_eq!(ingress.webhook_name(false, "example.com"), "vingress-v1.networking.example.com");
        assert_eq!(api.gvk(), "cache/v1alpha1, Kind=Memcached");
    }

    #[test]
    fn the_template_context_holds_every_spelling() {
        let value = serde_json::to_value(memcached()).unwrap();
        assert_eq!(value["kind_snake"], "memcached");
        assert_eq!(value["crd_patch_file"], "webhook_in_cache.example.com_memcacheds");
        assert_eq!(value["role_prefix"], "cache_memcached");
        assert_eq!(value["plural"], "memcacheds");
    }
}
