//! The names of an API: `--domain`, the project name, `--group`, `--version`, `--kind` and
//! `--plural`, with the Kubernetes and Rust rules each must meet and the spellings derived from
//! them.

use std::path::Path;

use anyhow::{Result, anyhow};

use super::plural::pluralize;
use super::{
    CLASHING_KINDS, FILE_NAME_MAX, GENERATED_NAMES, LABEL_MAX, RESERVED_CRATES, RUST_KEYWORDS, SUBDOMAIN_MAX, invalid,
    is_label, quote, subdomain_problem,
};

/// `--domain`: the suffix of every API group (`cache` + `example.com` → `cache.example.com`), so it
/// ends up in each CRD's `spec.group` and name (`memcacheds.cache.example.com`), which Kubernetes
/// requires to be lowercase RFC 1123 subdomains.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Domain(pub(super) String);

impl Domain {
    /// Accepts a lowercase RFC 1123 subdomain: at most 253 characters, labels of at most 63.
    pub fn parse(s: &str) -> Result<Self> {
        let rule = if s.is_empty() {
            "a domain cannot be empty".to_string()
        } else if let Some(rule) = subdomain_problem(s, "a domain") {
            rule
        } else if let Some(rule) = protected_group(s) {
            rule
        } else if let Some((pattern, name)) = too_long(&format!("a.{s}"), "a", "v1", "a", "a", "a") {
            format!(
                "a domain must be at most {} characters (it has {}), because every file name that holds it must \
                 fit in {FILE_NAME_MAX} bytes (255, less the suffix of memop's temporary file), and with it even \
                 a group, kind and plural of one letter make {pattern} {} bytes long",
                s.len() - (name.len() - FILE_NAME_MAX),
                s.len(),
                name.len()
            )
        } else {
            return Ok(Self(s.to_string()));
        };
        Err(invalid("--domain", s, rule, "\"example.com\""))
    }
}

/// Why the API server refuses a CRD in `group` without an approval, if it does: `k8s.io`,
/// `kubernetes.io` and their subdomains belong to the Kubernetes project, and a CRD there needs an
/// `api-approved.kubernetes.io` annotation linking the API review that approved it.
fn protected_group(group: &str) -> Option<String> {
    let protected = ["k8s.io", "kubernetes.io"]
        .into_iter()
        .find(|community| group == *community || group.ends_with(&format!(".{community}")))?;
    Some(format!(
        "API groups under {protected} belong to the Kubernetes project: the API server refuses a CRD in \
         {group:?} without an approved API review (the api-approved.kubernetes.io annotation); use a domain of \
         your own"
    ))
}

/// The project name: the Cargo package and binary, the `<name>-system` namespace, the `<name>-`
/// prefix of every resource and the `app.kubernetes.io/name` label. So it must be an RFC 1123
/// label (kubebuilder's rule) that is also a usable crate name: starting with a letter, and not a
/// Rust keyword or a name Cargo reserves once `-` becomes `_`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProjectName(pub(super) String);

/// The longest name config/ derives from the project's: the metrics Service, after the
/// `<project>-` name prefix (tests/cli/hostile.rs renders every object to keep this the longest).
const METRICS_SERVICE: &str = "-controller-manager-metrics-service";
/// The longest project name whose derived object names fit their limits.
pub const PROJECT_NAME_MAX: usize = LABEL_MAX - METRICS_SERVICE.len();

impl ProjectName {
    /// Validates `--project-name`.
    pub fn parse(s: &str) -> Result<Self> {
        Self::check(s, "")
    }

    /// Validates the `projectName` PROJECT records: the same rules, in a message that names
    /// that field (the user passed no flag).
    pub fn from_project(s: &str) -> Result<Self> {
        Self::check(s, "").map_err(|e| {
            let message = e.to_string();
            let message = message.strip_suffix("; pass --project-name to choose another").unwrap_or(&message);
            anyhow!("invalid projectName{}", message.strip_prefix("invalid project name").unwrap_or(message))
        })
    }

    /// kubebuilder's default: the lowercased base name of the project directory.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            return Err(anyhow!(
                "cannot take a project name from directory {dir:?}; pass --project-name \
                 (e.g. --project-name memcached-operator)"
            ));
        };
        let source = format!(" (the lowercased name of directory {dir:?})");
        Self::check(&name.to_lowercase(), &source)
    }

    /// The Rust crate name: `memcached-operator` → `memcached_operator`.
    pub fn crate_name(&self) -> String {
        self.0.replace('-', "_")
    }

    fn check(s: &str, source: &str) -> Result<Self> {
        let crate_name = s.replace('-', "_");
        let rule = if s.is_empty() {
            "a project name cannot be empty".to_string()
        } else if !is_label(s, true) {
            "a project name must be a lowercase RFC 1123 label that is also a crate name: a-z, 0-9 \
             and '-', starting with a letter and ending with a letter or digit"
                .to_string()
        } else if s.len() > PROJECT_NAME_MAX {
            format!(
                "a project name must be at most {PROJECT_NAME_MAX} characters (it has {}), because it prefixes the \
                 names of the objects in config/, and the longest, the Service {s}{METRICS_SERVICE}, must be a \
                 DNS label of at most {LABEL_MAX}",
                s.len()
            )
        } else if RUST_KEYWORDS.contains(&crate_name.as_str()) {
            format!("its crate name {crate_name:?} is a Rust keyword")
        } else if RESERVED_CRATES.contains(&crate_name.as_str()) {
            format!("its crate name {crate_name:?} is reserved by Cargo or the standard library")
        } else if crate::embedded::dependency_crates().contains(&crate_name) {
            format!(
                "its crate name {crate_name:?} is the name of a crate the generated project \
                 depends on, so `use {crate_name}::…` would be ambiguous"
            )
        } else if crate::embedded::generated_names().contains(&crate_name) {
            format!(
                "the generated project already uses {crate_name:?} as a name (a binary of its own, or a module \
                 its tests import under that name), so the crate's own name would clash with it"
            )
        } else if crate::embedded::locked_packages().contains(&s.to_string()) {
            format!(
                "{s:?} is a package in the Cargo.lock memop ships with the project (a dependency of a \
                 dependency), so `cargo build --locked` could not resolve the project's own package"
            )
        } else {
            return Ok(Self(s.to_string()));
        };
        Err(anyhow!(
            "invalid project name {}{source}: {rule} (e.g. \"memcached-operator\"); \
             pass --project-name to choose another",
            quote(s)
        ))
    }
}

/// `--group`: with the domain it forms the API group (`cache.example.com`) in every CRD and
/// `apiVersion`, which Kubernetes requires to be an RFC 1123 subdomain. The group alone names the
/// Rust module `src/api/<group>/`, so it must start with a letter and not be a keyword.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Group(pub(super) String);

impl Group {
    /// Validates `--group` against the project's domain (kubebuilder checks `group.domain`).
    pub fn parse(s: &str, domain: &Domain) -> Result<Self> {
        let qualified = format!("{s}.{domain}");
        let module = s.replace(['-', '.'], "_");
        let rule = if s.is_empty() {
            "a group cannot be empty".to_string()
        } else if let Some(rule) = subdomain_problem(&qualified, &quote(&qualified)) {
            rule
        } else if let Some(rule) = protected_group(&qualified) {
            rule
        } else if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
            "a group must start with a letter, because it becomes a Rust module name".to_string()
        } else if let Some((pattern, name)) = too_long(&qualified, s, "v1", "a", "a", "a") {
            format!(
                "a group must be at most {} characters with --domain {domain} (it has {}), because every file name \
                 that holds it must fit in {FILE_NAME_MAX} bytes (255, less the suffix of memop's temporary file), \
                 and with it even a kind and plural of one letter make {pattern} {} bytes long",
                s.len() - (name.len() - FILE_NAME_MAX),
                s.len(),
                name.len()
            )
        } else if RUST_KEYWORDS.contains(&module.as_str()) {
            format!("its Rust module name {module:?} is a keyword; choose another group")
        } else if super::api_module_names().contains(&module) {
            format!(
                "its Rust module name {module:?} is a name src/api/mod.rs already uses (a crate its code names, \
                 as in `{module}::…`, or an import), and the group's module would take its place there; choose \
                 another group"
            )
        } else {
            return Ok(Self(s.to_string()));
        };
        Err(invalid("--group", s, rule, "--group cache"))
    }

    /// The full API group: `cache` + `example.com` → `cache.example.com`.
    pub fn qualified(&self, domain: &Domain) -> String {
        format!("{}.{domain}", self.0)
    }

    /// The Rust module (and directory) name: `-` and `.` become `_` (`foo-bar.baz` → `foo_bar_baz`).
    pub fn module_name(&self) -> String {
        self.0.replace(['-', '.'], "_")
    }
}

/// The longest file names the templates make from an API's names, as `(pattern, file name)`:
/// the conversion patch of its CRD (`webhook-conversion/config/crd/patches/`; the CRD itself,
/// `config/crd/bases/<group>.<domain>_<plural>.yaml`, is shorter), its RBAC helper roles
/// (`resource/config/rbac/`: `editor` and `viewer` are the longest) and its sample.
/// `the_longest_file_names_are_known` checks every template's file name against these.
pub(super) fn file_names(
    qualified: &str,
    group: &str,
    version: &str,
    kind_snake: &str,
    kind_lower: &str,
    plural: &str,
) -> [(&'static str, String); 3] {
    let group_module = group.replace(['-', '.'], "_");
    [
        (
            "config/crd/patches/webhook_in_<group>.<domain>_<plural>.yaml",
            format!("webhook_in_{qualified}_{plural}.yaml"),
        ),
        ("config/rbac/<group>_<kind>_editor_role.yaml", format!("{group_module}_{kind_snake}_editor_role.yaml")),
        ("config/samples/<group>_<version>_<kind>.yaml", format!("{group}_{version}_{kind_lower}.yaml")),
    ]
}

/// The first of [`file_names`] longer than [`FILE_NAME_MAX`].
fn too_long(
    qualified: &str,
    group: &str,
    version: &str,
    kind_snake: &str,
    kind_lower: &str,
    plural: &str,
) -> Option<(&'static str, String)> {
    file_names(qualified, group, version, kind_snake, kind_lower, plural)
        .into_iter()
        .find(|(_, name)| name.len() > FILE_NAME_MAX)
}

/// Refuses an API whose names, each valid alone, together make a generated file name longer than
/// a file system takes, or a CRD or webhook name longer than Kubernetes takes (a DNS subdomain of
/// at most 253 characters). `--domain` and `--group` alone are held to this with one-letter kind
/// and plural; this checks the API's own.
pub fn check_file_names(domain: &Domain, group: &Group, version: &Version, kind: &Kind, plural: &Plural) -> Result<()> {
    let qualified = group.qualified(domain);
    let (g, k) = (group.as_str(), kind.as_str());
    if let Some((pattern, name)) =
        too_long(&qualified, g, version.as_str(), &kind.snake(), &kind.lower(), plural.as_str())
    {
        let rule = format!(
            "with --kind {k} (plural {plural}, version {version}) the file {pattern} would have a name of {} bytes, \
             and a generated file name can have at most {FILE_NAME_MAX} (255, less the suffix of memop's temporary \
             file); shorten the group or the kind by {} characters",
            name.len(),
            name.len() - FILE_NAME_MAX
        );
        return Err(invalid("--group", g, rule, "--group cache"));
    }
    let names = [
        ("the CRD's name <plural>.<group>.<domain>", format!("{plural}.{qualified}")),
        (
            "the name of its webhooks, m<kind>-<version>.<group>.<domain>",
            format!("m{}-{version}.{qualified}", kind.lower()),
        ),
    ];
    if let Some((what, name)) = names.iter().find(|(_, name)| name.len() > SUBDOMAIN_MAX) {
        let rule = format!(
            "with --kind {k} (plural {plural}, version {version}) {what} would be {} characters, and Kubernetes \
             takes at most {SUBDOMAIN_MAX} (a DNS subdomain); shorten the group or the kind by {} characters",
            name.len(),
            name.len() - SUBDOMAIN_MAX
        );
        return Err(invalid("--group", g, rule, "--group cache"));
    }
    Ok(())
}

/// `--version`: a CRD version (`spec.versions[].name`) and the `src/api/<group>/<version>/` module.
/// kubebuilder only asks for an RFC 1123 subdomain; memop keeps the Kubernetes convention
/// (`v1`, `v1alpha1`, `v2beta3`) so versions sort by stability and are valid Rust identifiers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Version(pub(super) String);

impl Version {
    /// Accepts `v<N>`, `v<N>alpha<M>` or `v<N>beta<M>`, N and M ≥ 1 without leading zeros.
    pub fn parse(s: &str) -> Result<Self> {
        /// Strips a positive number without leading zeros from the front of `s`.
        fn number(s: &str) -> Option<&str> {
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            (digits > 0 && !s.starts_with('0')).then(|| &s[digits..])
        }
        let well_formed = s
            .strip_prefix('v')
            .and_then(number)
            .and_then(|rest| match rest {
                "" => Some(""),
                _ => rest.strip_prefix("alpha").or_else(|| rest.strip_prefix("beta")).and_then(number),
            })
            .is_some_and(str::is_empty);
        if s.is_empty() {
            Err(invalid("--version", s, "a version cannot be empty", "\"v1alpha1\""))
        } else if !well_formed {
            Err(anyhow!(
                "invalid --version {}: a version must look like v1, v1alpha1 or v2beta3: v<N>, \
                 optionally followed by alpha<M> or beta<M>, where N and M are positive numbers \
                 without leading zeros",
                quote(s)
            ))
        } else if s.len() > LABEL_MAX {
            let rule = format!("a version must be at most {LABEL_MAX} characters");
            Err(invalid("--version", s, rule, "\"v1alpha1\""))
        } else {
            Ok(Self(s.to_string()))
        }
    }

    /// The Rust module name, which is the version itself (`v1alpha1`).
    pub fn module_name(&self) -> &str {
        &self.0
    }
}

/// `--kind`: the CRD's `spec.names.kind` and the Rust struct name. Its lowercase form is the CRD's
/// `spec.names.singular`, which Kubernetes requires to be an RFC 1035 label (kubebuilder's rule);
/// its snake_case form names Rust modules and files, so it must not be a keyword.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kind(pub(super) String);

impl Kind {
    /// Accepts PascalCase ASCII (uppercase letter first, then letters and digits), ≤ 63 characters.
    pub fn parse(s: &str) -> Result<Self> {
        Self::check(s, GENERATED_NAMES)
    }

    /// A kind of Kubernetes' own (`super::builtin`), which the project does not define: the
    /// same rules, but for the names the templates of a kind's own types and controllers use
    /// (`Deployment` names k8s-openapi's type in a controller over Deployments; the templates
    /// of such a controller use none of those kinds, which a unit test keeps so).
    pub fn parse_builtin(s: &str) -> Result<Self> {
        Self::check(s, &[])
    }

    fn check(s: &str, reserved: &[&str]) -> Result<Self> {
        let kind = Self(s.to_string());
        let (snake, kebab) = (kind.snake(), kind.kebab());
        let rename = format!("\"{s}Config\"");
        let (rule, example) = if s.is_empty() {
            ("a kind cannot be empty".to_string(), "\"Memcached\"")
        } else if !s.starts_with(|c: char| c.is_ascii_uppercase()) || !s.bytes().all(|c| c.is_ascii_alphanumeric()) {
            let rule = "a kind must be PascalCase, starting with an uppercase letter and \
                containing only letters and digits";
            (rule.to_string(), "\"Memcached\"")
        } else if s.len() > LABEL_MAX {
            let rule = format!(
                "a kind must be at most {LABEL_MAX} characters (it has {}), because its lowercase \
                 form is the CRD's singular name",
                s.len()
            );
            (rule, "\"Memcached\"")
        } else if CLASHING_KINDS.contains(&s) {
            let rule = "a kind cannot be Self or a Rust prelude name (Option, Result, String, …), \
                because the generated code uses those";
            (rule.to_string(), rename.as_str())
        } else if reserved.contains(&s) {
            let rule = "the generated code already uses that name (an import or a type of the \
                controller, its tests or its API module), so the kind's own type would clash";
            (rule.to_string(), rename.as_str())
        } else if RUST_KEYWORDS.contains(&snake.as_str()) {
            let rule = format!("its Rust module name {snake:?} is a keyword; choose another kind");
            (rule, rename.as_str())
        } else if RUST_KEYWORDS.contains(&s.to_lowercase().as_str()) {
            let rule = format!(
                "its lowercase spelling {:?} is a Rust keyword, and the generated code names variables \
                 after the kind that way; choose another kind",
                s.to_lowercase()
            );
            (rule, rename.as_str())
        } else if ["std", "core", "alloc", "proc_macro"].contains(&snake.as_str())
            || crate::embedded::dependency_crates().contains(&snake)
        {
            let rule = format!(
                "its Rust module name {snake:?} is the name of a crate the generated code uses \
                 (`{snake}::…` would then mean the module); choose another kind"
            );
            (rule, rename.as_str())
        } else if kebab.len() > LABEL_MAX {
            let rule = format!(
                "its kebab-case form {kebab:?} must be at most {LABEL_MAX} characters (it has {}), \
                 because it goes into resource names and label values",
                kebab.len()
            );
            (rule, "\"Memcached\"")
        } else {
            return Ok(kind);
        };
        Err(invalid("--kind", s, rule, example))
    }

    /// All lowercase (`HealthCheckPolicy` → `healthcheckpolicy`): the CRD's singular name.
    pub fn lower(&self) -> String {
        self.0.to_ascii_lowercase()
    }

    /// Module and file name: `HealthCheckPolicy` → `health_check_policy`, `HTTPRoute` → `http_route`.
    pub fn snake(&self) -> String {
        self.words().join("_")
    }

    /// Environment-variable spelling: `HealthCheckPolicy` → `HEALTH_CHECK_POLICY`.
    pub fn screaming(&self) -> String {
        self.snake().to_ascii_uppercase()
    }

    /// Resource-name and label spelling: `HealthCheckPolicy` → `health-check-policy`.
    pub fn kebab(&self) -> String {
        self.words().join("-")
    }

    /// A short name for kubectl (`kubectl get mc`): the initials of a multi-word kind
    /// (`HealthCheckPolicy` → `hcp`), else the first letter and the next distinct consonant
    /// (`Memcached` → `mc`). `None` when that would shadow a built-in short name.
    pub fn short_name(&self) -> Option<String> {
        let words = self.words();
        let short: String = if words.len() > 1 {
            words.iter().filter_map(|w| w.chars().next()).collect()
        } else {
            let lower = self.lower();
            let first = lower.chars().next()?;
            let next = lower.chars().skip(1).find(|&c| c != first && !"aeiou0123456789".contains(c))?;
            [first, next].iter().collect()
        };
        (!BUILTIN_SHORT_NAMES.contains(&short.as_str())).then_some(short)
    }

    /// The container port's name: an IANA service name (at most 15 characters, lowercase
    /// letters, digits and single hyphens) from the kebab-case kind.
    pub fn port_name(&self) -> String {
        let kebab = self.kebab();
        let name: String = kebab.chars().take(15).collect();
        name.trim_end_matches('-').to_string()
    }

    /// Lowercase words. A new word starts at an uppercase letter after a lowercase letter or a
    /// digit, and at the last capital of an acronym followed by lowercase (`HTTP|Route`).
    fn words(&self) -> Vec<String> {
        let b = self.0.as_bytes();
        let mut words = vec![String::new()];
        for (i, &c) in b.iter().enumerate() {
            let prev = if i > 0 { b[i - 1] } else { 0 };
            let next_lower = b.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            if i > 0 && c.is_ascii_uppercase() && (!prev.is_ascii_uppercase() || next_lower) {
                words.push(String::new());
            }
            if let Some(word) = words.last_mut() {
                word.push(char::from(c.to_ascii_lowercase()));
            }
        }
        words
    }
}

/// Short names of built-in kinds that a CRD's short name must not shadow.
const BUILTIN_SHORT_NAMES: &[&str] = &[
    "cj", "cm", "crd", "cs", "csr", "deploy", "ds", "ep", "ev", "hpa", "ing", "limits", "netpol", "no", "ns", "pc",
    "pdb", "po", "psp", "pv", "pvc", "quota", "rc", "rs", "sa", "sc", "sts", "svc",
];

/// The CRD's `spec.names.plural`: the URL path segment (`/apis/cache.example.com/v1/memcacheds`),
/// the first part of the CRD name and the RBAC `resources` entry. Kubernetes requires an RFC 1035
/// label (kubebuilder's rule).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Plural(pub(super) String);

impl Plural {
    /// Validates a `--plural` override.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = |rule: String| invalid("--plural", s, rule, "\"memcacheds\"");
        if s.is_empty() {
            Err(bad("a plural cannot be empty".into()))
        } else if !is_label(s, true) {
            Err(bad("a plural must be a lowercase RFC 1035 label: a-z, 0-9 and '-', starting \
                with a letter and ending with a letter or digit"
                .into()))
        } else if s.len() > LABEL_MAX {
            let n = s.len();
            Err(bad(format!("a plural must be at most {LABEL_MAX} characters (it has {n})")))
        } else {
            Ok(Self(s.to_string()))
        }
    }

    /// kubebuilder's default plural, `flect.Pluralize(strings.ToLower(kind))`. Fails when that is
    /// not a valid plural (a 63-character kind plus `s`, or flect's acronym quirk: `Dns` gives
    /// `dnsDNSes`), as kubebuilder does; the message asks for `--plural`.
    pub fn for_kind(kind: &Kind) -> Result<Self> {
        let plural = pluralize(&kind.lower());
        Self::parse(&plural).map_err(|_| {
            let lower = kind.lower();
            let guess = format!("{lower}{}", if lower.ends_with('s') { "es" } else { "s" });
            let example = Self::parse(&guess).map_or("memcacheds".into(), |p| p.0);
            anyhow!(
                "invalid --kind {}: its default plural {} is not a lowercase RFC 1035 \
                 label of at most {LABEL_MAX} characters; pass --plural (e.g. --plural {example})",
                quote(kind.as_str()),
                quote(&plural)
            )
        })
    }

    /// Whether this is the default plural of `kind` (kubebuilder records only irregular plurals
    /// in PROJECT).
    pub fn is_regular_for(&self, kind: &Kind) -> bool {
        pluralize(&kind.lower()) == self.0
    }
}
