//! Validated user-supplied names, and every spelling memop derives from them.
//!
//! Flags such as `--domain`, `--group`, `--version` and `--kind` end up in Kubernetes object names
//! (CRDs, namespaces, labels), in Rust identifiers (crate, module and type names) and in file paths.
//! Each flag gets a newtype here whose only constructor validates it, so code that holds a [`Kind`]
//! or a [`Group`] never checks it again. Where a name lands in a Kubernetes object the rules are
//! kubebuilder's (`pkg/model/resource`); where it also becomes Rust, the Rust rules are added.
//!
//! Every error is one line: `invalid <flag> "<value>": <rule> (e.g. <valid example>)`.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use anyhow::{Result, anyhow};

/// Longest RFC 1123 / RFC 1035 label (a namespace, a label value, one part of a DNS name).
const LABEL_MAX: usize = 63;
/// Longest RFC 1123 subdomain (an API group, a CRD name).
const SUBDOMAIN_MAX: usize = 253;

/// Rust keywords, strict and reserved (2024 edition): none can name a crate or module.
const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
    "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become",
    "box", "do", "final", "gen", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// Crate names Cargo rejects (`test`, its build directories) or that shadow a sysroot crate.
const RESERVED_CRATES: &[&str] =
    &["test", "build", "deps", "examples", "incremental", "std", "core", "alloc", "proc_macro"];

/// Kinds whose generated struct would shadow a prelude name the generated code itself uses
/// (kube's `CustomResource` derive writes `status: Option<…>`, controllers return `Result`).
const CLASHING_KINDS: &[&str] = &[
    "Self",
    "Option",
    "Some",
    "None",
    "Result",
    "Ok",
    "Err",
    "String",
    "Vec",
    "Box",
    "Default",
    "Clone",
    "Copy",
    "Send",
    "Sync",
    "Sized",
    "Drop",
    "Fn",
    "FnMut",
    "FnOnce",
    "From",
    "Into",
    "TryFrom",
    "TryInto",
    "Iterator",
    "IntoIterator",
    "Extend",
    "ToString",
    "ToOwned",
    "AsRef",
    "AsMut",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
    "Future",
    "IntoFuture",
    "Unpin",
];

/// Names that the files generated for a kind (its API module, controller, tests and benchmark)
/// import or declare: a kind of the same name would clash with them (E0252/E0255).
/// `names_imported_by_the_templates_are_reserved` (in `scaffold::templates`) keeps this list
/// complete when a template changes.
pub const GENERATED_NAMES: &[&str] = &[
    "Action",
    "Api",
    "ApiResource",
    "Arc",
    "BTreeMap",
    "Capabilities",
    "Client",
    "Cluster",
    "Condition",
    "Conditions",
    "Container",
    "ContainerPort",
    "Context",
    "Controller",
    "CustomResource",
    "DeleteParams",
    "Deployment",
    "DeploymentSpec",
    "Deserialize",
    "Duration",
    "DynamicObject",
    "Error",
    "Event",
    "EventType",
    "FINALIZER",
    "HashMap",
    "IMAGE",
    "IMAGE_ENV",
    "Instant",
    "Instruments",
    "JsonSchema",
    "LabelSelector",
    "ListParams",
    "Manager",
    "Mutex",
    "NAME",
    "ObjectMeta",
    "Patch",
    "PatchParams",
    "PodSecurityContext",
    "PodSpec",
    "PodTemplateSpec",
    "PostParams",
    "RESYNC",
    "RULES",
    "Recorder",
    "Resource",
    "ResourceExt",
    "Rollout",
    "Rule",
    "SeccompProfile",
    "SecurityContext",
    "Serialize",
    "Shared",
    "StreamExt",
    "TestEnv",
    "Truth",
    "Verb",
    "Workloads",
];

/// The one error shape: `invalid <what> "<value>": <rule> (e.g. <example>)`.
fn invalid(what: &str, value: &str, rule: impl fmt::Display, example: &str) -> anyhow::Error {
    anyhow!("invalid {what} {value:?}: {rule} (e.g. {example})")
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (RFC 1123 label), or `[a-z]…` (RFC 1035) when `letter_first`.
/// Length is checked by the callers, so they can say which limit applies.
fn is_label(s: &str, letter_first: bool) -> bool {
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (s.as_bytes().first(), s.as_bytes().last()) {
        (Some(first), Some(last)) => {
            (first.is_ascii_lowercase() || (!letter_first && alnum(first)))
                && alnum(last)
                && s.bytes().all(|c| alnum(&c) || c == b'-')
        }
        _ => false,
    }
}

/// Kubernetes' `IsDNS1123Subdomain`, plus DNS's limit of 63 characters per label: `None` when
/// `s` is one, else the broken rule, phrased about `subject`.
fn subdomain_problem(s: &str, subject: &str) -> Option<String> {
    if !s.split('.').all(|label| is_label(label, false)) {
        Some(format!(
            "{subject} must be a lowercase RFC 1123 subdomain: labels of a-z, 0-9 and '-', \
             separated by '.', each starting and ending with a letter or digit"
        ))
    } else if s.len() > SUBDOMAIN_MAX {
        let n = s.len();
        Some(format!("{subject} must be at most {SUBDOMAIN_MAX} characters (it has {n})"))
    } else {
        let label = s.split('.').find(|label| label.len() > LABEL_MAX)?;
        Some(format!(
            "each '.'-separated label of {subject} must be at most {LABEL_MAX} characters \
             ({label:?} has {})",
            label.len()
        ))
    }
}

/// Implements `as_str`, `Display`, `AsRef<str>` for newtypes over a `String`.
macro_rules! string_name {
    ($($t:ident),*) => {$(
        impl $t {
            /// The validated value, exactly as the user gave it.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl AsRef<str> for $t {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    )*};
}
string_name!(Domain, ProjectName, Group, Version, Kind, Plural, Image);

/// Implements `FromStr` (for clap's `value_parser!`) through each type's `parse`.
macro_rules! from_str_via_parse {
    ($($t:ident),*) => {$(
        impl FromStr for $t {
            type Err = anyhow::Error;
            fn from_str(s: &str) -> Result<Self> {
                Self::parse(s)
            }
        }
    )*};
}
from_str_via_parse!(Domain, ProjectName, Version, Kind, Plural, Image);
from_str_via_parse!(ContainerPort, RunAsUser, ContainerCommand);

/// `--domain`: the suffix of every API group (`cache` + `example.com` → `cache.example.com`), so it
/// ends up in each CRD's `spec.group` and name (`memcacheds.cache.example.com`), which Kubernetes
/// requires to be lowercase RFC 1123 subdomains.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Domain(String);

impl Domain {
    /// Accepts a lowercase RFC 1123 subdomain: at most 253 characters, labels of at most 63.
    pub fn parse(s: &str) -> Result<Self> {
        let rule = if s.is_empty() {
            "a domain cannot be empty".to_string()
        } else if let Some(rule) = subdomain_problem(s, "a domain") {
            rule
        } else {
            return Ok(Self(s.to_string()));
        };
        Err(invalid("--domain", s, rule, "\"example.com\""))
    }
}

/// The project name: the Cargo package and binary, the `<name>-system` namespace, the `<name>-`
/// prefix of every resource and the `app.kubernetes.io/name` label. So it must be an RFC 1123
/// label (kubebuilder's rule) that is also a usable crate name: starting with a letter, and not a
/// Rust keyword or a name Cargo reserves once `-` becomes `_`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProjectName(String);

impl ProjectName {
    /// Validates `--project-name`.
    pub fn parse(s: &str) -> Result<Self> {
        Self::check(s, "")
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
        } else if s.len() > LABEL_MAX {
            format!("a project name must be at most {LABEL_MAX} characters (it has {})", s.len())
        } else if RUST_KEYWORDS.contains(&crate_name.as_str()) {
            format!("its crate name {crate_name:?} is a Rust keyword")
        } else if RESERVED_CRATES.contains(&crate_name.as_str()) {
            format!("its crate name {crate_name:?} is reserved by Cargo or the standard library")
        } else if crate::scaffold::dependency_crates().contains(&crate_name) {
            format!(
                "its crate name {crate_name:?} is the name of a crate the generated project \
                 depends on, so `use {crate_name}::…` would be ambiguous"
            )
        } else {
            return Ok(Self(s.to_string()));
        };
        Err(anyhow!(
            "invalid project name {s:?}{source}: {rule} (e.g. \"memcached-operator\"); \
             pass --project-name to choose another"
        ))
    }
}

/// `--group`: with the domain it forms the API group (`cache.example.com`) in every CRD and
/// `apiVersion`, which Kubernetes requires to be an RFC 1123 subdomain. The group alone names the
/// Rust module `src/api/<group>/`, so it must start with a letter and not be a keyword.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Group(String);

impl Group {
    /// Validates `--group` against the project's domain (kubebuilder checks `group.domain`).
    pub fn parse(s: &str, domain: &Domain) -> Result<Self> {
        let qualified = format!("{s}.{domain}");
        let module = s.replace(['-', '.'], "_");
        let rule = if s.is_empty() {
            "a group cannot be empty".to_string()
        } else if let Some(rule) = subdomain_problem(&qualified, &format!("{qualified:?}")) {
            rule
        } else if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
            "a group must start with a letter, because it becomes a Rust module name".to_string()
        } else if RUST_KEYWORDS.contains(&module.as_str()) {
            format!("its Rust module name {module:?} is a keyword; choose another group")
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

/// `--version`: a CRD version (`spec.versions[].name`) and the `src/api/<group>/<version>/` module.
/// kubebuilder only asks for an RFC 1123 subdomain; memop keeps the Kubernetes convention
/// (`v1`, `v1alpha1`, `v2beta3`) so versions sort by stability and are valid Rust identifiers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Version(String);

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
                "invalid --version {s:?}: a version must look like v1, v1alpha1 or v2beta3: v<N>, \
                 optionally followed by alpha<M> or beta<M>, where N and M are positive numbers \
                 without leading zeros"
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
pub struct Kind(String);

impl Kind {
    /// Accepts PascalCase ASCII (uppercase letter first, then letters and digits), ≤ 63 characters.
    pub fn parse(s: &str) -> Result<Self> {
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
        } else if GENERATED_NAMES.contains(&s) {
            let rule = "the generated code already uses that name (an import or a type of the \
                controller, its tests or its API module), so the kind's own type would clash";
            (rule.to_string(), rename.as_str())
        } else if RUST_KEYWORDS.contains(&snake.as_str()) {
            let rule = format!("its Rust module name {snake:?} is a keyword; choose another kind");
            (rule, rename.as_str())
        } else if ["std", "core", "alloc", "proc_macro"].contains(&snake.as_str())
            || crate::scaffold::dependency_crates().contains(&snake)
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
pub struct Plural(String);

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
                "invalid --kind {:?}: its default plural {plural:?} is not a lowercase RFC 1035 \
                 label of at most {LABEL_MAX} characters; pass --plural (e.g. --plural {example})",
                kind.as_str()
            )
        })
    }

    /// Whether this is the default plural of `kind` (kubebuilder records only irregular plurals
    /// in PROJECT).
    pub fn is_regular_for(&self, kind: &Kind) -> bool {
        pluralize(&kind.lower()) == self.0
    }
}

/// How a [`DICTIONARY`] entry takes part, after the flags of flect's `word` struct.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// A whole word and a suffix rule; its plural and alternative count as already plural.
    Both,
    /// A whole word only, no suffix rule (`ox` → `oxen`, but `box` → `boxes`).
    Exact,
    /// Like `Both`, but its plurals do not count as already plural (flect's `unidirectional`).
    OneWay,
}
use Entry::{Both, Exact, OneWay};

/// flect v1.0.3's `dictionary` (plural_rules.go), in its order: singular, plural, alternative
/// plural (recognised as already plural), flags. Uncountables have plural = singular.
#[rustfmt::skip]
const DICTIONARY: &[(&str, &str, &str, Entry)] = &[
    ("aircraft", "aircraft", "", Both), ("beef", "beef", "beefs", Both), ("bison", "bison", "", Both),
    ("blues", "blues", "", OneWay), ("chassis", "chassis", "", Both), ("deer", "deer", "", Both),
    ("fish", "fish", "fishes", Both), ("moose", "moose", "", Both), ("police", "police", "", Both),
    ("salmon", "salmon", "salmons", Both), ("series", "series", "", Both), ("sheep", "sheep", "", Both),
    ("shrimp", "shrimp", "shrimps", Both), ("species", "species", "", Both),
    ("swine", "swine", "swines", Both), ("trout", "trout", "trouts", Both),
    ("tuna", "tuna", "tunas", Both), ("you", "you", "", Both),
    ("child", "children", "", Both), ("ox", "oxen", "", Exact),
    ("foot", "feet", "", Both), ("goose", "geese", "", Both), ("man", "men", "", Both),
    ("human", "humans", "", Both), ("louse", "lice", "", Exact), ("mouse", "mice", "", Both),
    ("tooth", "teeth", "", Both), ("woman", "women", "", Both),
    ("die", "dice", "", Exact), ("person", "people", "", Both),
    ("adieu", "adieux", "adieus", Both), ("fabliau", "fabliaux", "", Both),
    ("bureau", "bureaus", "bureaux", Both),
    ("criterion", "criteria", "", Both), ("ganglion", "ganglia", "ganglions", Both),
    ("lexicon", "lexica", "lexicons", Both), ("mitochondrion", "mitochondria", "mitochondrions", Both),
    ("noumenon", "noumena", "", Both), ("phenomenon", "phenomena", "", Both), ("taxon", "taxa", "", Both),
    ("media", "media", "", Both), ("medium", "media", "mediums", OneWay),
    ("stadium", "stadiums", "stadia", Both), ("aquarium", "aquaria", "aquariums", Both),
    ("auditorium", "auditoria", "auditoriums", Both), ("symposium", "symposia", "symposiums", Both),
    ("curriculum", "curriculums", "curricula", Both), ("quota", "quotas", "", Both),
    ("alumnus", "alumni", "alumnuses", Both), ("bacillus", "bacilli", "", Both),
    ("cactus", "cacti", "cactuses", Both), ("coccus", "cocci", "", Both),
    ("focus", "foci", "focuses", Both), ("locus", "loci", "locuses", Both),
    ("nucleus", "nuclei", "nucleuses", Both), ("octopus", "octupuses", "octopi", Both),
    ("radius", "radii", "radiuses", Both), ("syllabus", "syllabi", "", Both),
    ("corpus", "corpora", "corpuses", Both), ("genus", "genera", "", Both),
    ("alumna", "alumnae", "", Both), ("vertebra", "vertebrae", "", Both),
    ("differentia", "differentiae", "", Both), ("minutia", "minutiae", "", Both),
    ("vita", "vitae", "", Both), ("larva", "larvae", "", Both), ("postcava", "postcavae", "", Both),
    ("praecava", "praecavae", "", Both), ("uva", "uvae", "", Both),
    ("apex", "apices", "apexes", Both), ("codex", "codices", "codexes", Both),
    ("index", "indices", "indexes", Both), ("latex", "latices", "latexes", Both),
    ("vertex", "vertices", "vertexes", Both), ("vortex", "vortices", "vortexes", Both),
    ("appendix", "appendices", "appendixes", Both), ("radix", "radices", "radixes", Both),
    ("helix", "helices", "helixes", Both),
    ("axis", "axes", "", Exact), ("crisis", "crises", "", Both), ("ellipsis", "ellipses", "", OneWay),
    ("genesis", "geneses", "", Both), ("oasis", "oases", "", Both), ("thesis", "theses", "", Both),
    ("testis", "testes", "", Both), ("base", "bases", "", Both), ("basis", "bases", "", OneWay),
    ("alias", "aliases", "", Exact), ("vedalia", "vedalias", "", Both),
    ("use", "uses", "", Exact), ("abuse", "abuses", "", Both), ("cause", "causes", "", Both),
    ("clause", "clauses", "", Both), ("cruse", "cruses", "", Both), ("excuse", "excuses", "", Both),
    ("fuse", "fuses", "", Both), ("house", "houses", "", Both), ("misuse", "misuses", "", Both),
    ("muse", "muses", "", Both), ("pause", "pauses", "", Both), ("ache", "aches", "", Both),
    ("topaz", "topazes", "", Both), ("buffalo", "buffaloes", "buffalos", Both),
    ("potato", "potatoes", "", Both), ("tomato", "tomatoes", "", Both),
    ("equipment", "equipment", "", Both), ("information", "information", "", Both),
    ("jeans", "jeans", "", Both), ("money", "money", "", Both), ("news", "news", "", Both),
    ("rice", "rice", "", Both),
    ("dwarf", "dwarfs", "dwarves", Both), ("hoof", "hoofs", "hooves", Both),
    ("thief", "thieves", "", Both), ("chive", "chives", "", Both), ("hive", "hives", "", Both),
    ("move", "moves", "", Both), ("movie", "movies", "", Both), ("cookie", "cookies", "", Both),
    ("pretorium", "pretoriums", "", Both), ("agenda", "agendas", "", Both),
    ("formula", "formulas", "formulae", Both), ("shoe", "shoes", "", Both),
    ("toe", "toes", "", Exact), ("graffiti", "graffiti", "", Both), ("ID", "IDs", "", Exact),
];

/// flect's `singularToPluralSuffixList`, in priority order (first match wins). The `bula` family
/// really maps `dula`, `lula`, `nula` and `vula` to `bulae` in flect.
#[rustfmt::skip]
const SUFFIX_RULES: &[(&str, &str)] = &[
    ("tive", "tives"), ("eaf", "eaves"), ("oaf", "oaves"), ("afe", "aves"), ("arf", "arves"),
    ("rfe", "rves"), ("rf", "rves"), ("lf", "lves"), ("fe", "ves"),
    ("ay", "ays"), ("ey", "eys"), ("oy", "oys"), ("quy", "quies"), ("uy", "uys"), ("y", "ies"),
    ("eau", "eaux"),
    ("bula", "bulae"), ("dula", "bulae"), ("lula", "bulae"), ("nula", "bulae"), ("vula", "bulae"),
    ("hedron", "hedra"),
    ("ium", "ia"), ("seum", "seums"), ("eum", "ea"), ("oum", "oa"), ("stracum", "straca"),
    ("dum", "da"), ("elum", "ela"), ("ilum", "ila"), ("olum", "ola"), ("ulum", "ula"),
    ("llum", "lla"), ("ylum", "yla"), ("imum", "ima"), ("ernum", "erna"), ("gnum", "gna"),
    ("brum", "bra"), ("crum", "cra"), ("terum", "tera"), ("serum", "sera"), ("trum", "tra"),
    ("antum", "anta"), ("atum", "ata"), ("entum", "enta"), ("etum", "eta"), ("itum", "ita"),
    ("otum", "ota"), ("utum", "uta"), ("ctum", "cta"), ("ovum", "ova"),
    ("trix", "trices"),
    ("iasis", "iases"), ("mesis", "meses"), ("kinesis", "kineses"), ("resis", "reses"),
    ("gnosis", "gnoses"), ("opsis", "opses"), ("ysis", "yses"),
    ("ouse", "ouses"), ("lause", "lauses"), ("us", "uses"),
    ("ch", "ches"), ("io", "ios"), ("sh", "shes"), ("ss", "sses"), ("ez", "ezzes"),
    ("iz", "izzes"), ("tz", "tzes"), ("zz", "zzes"), ("ano", "anos"), ("lo", "los"),
    ("to", "tos"), ("oo", "oos"), ("o", "oes"), ("x", "xes"), ("S", "Ses"),
];

/// flect's `baseAcronyms` that can match (it looks up the upper-cased word, so its mixed-case
/// entries such as `WiFi` never do). A word that is one of these is matched upper-cased.
#[rustfmt::skip]
const ACRONYMS: &[&str] = &[
    "OK", "UTF8", "HTML", "JSON", "JWT", "ID", "UUID", "SQL", "ACK", "ACL", "ADSL", "AES", "ANSI",
    "API", "ARP", "ATM", "BGP", "BSS", "CCITT", "CHAP", "CIDR", "CIR", "CLI", "CPE", "CPU", "CRC",
    "CRT", "CSMA", "CMOS", "DCE", "DEC", "DES", "DHCP", "DNS", "DRAM", "DSL", "DSLAM", "DTE",
    "DMI", "EHA", "EIA", "EIGRP", "EOF", "ESS", "FCC", "FCS", "FDDI", "FTP", "GBIC", "GEPOF",
    "HDLC", "HTTP", "HTTPS", "IANA", "ICMP", "IDF", "IDS", "IEEE", "IETF", "IMAP", "IP", "IPS",
    "ISDN", "ISP", "LACP", "LAN", "LAPB", "LAPF", "LLC", "MAC", "MC", "MDF", "MIB", "MPLS", "MTU",
    "NAC", "NAT", "NBMA", "NIC", "NRZ", "NRZI", "NVRAM", "OSI", "OSPF", "OUI", "PAP", "PAT", "PC",
    "PIM", "PCM", "PDU", "POP3", "POTS", "PPP", "PPTP", "PTT", "PVST", "RAM", "RARP", "RFC", "RIP",
    "RLL", "ROM", "RSTP", "RTP", "RCP", "SDLC", "SFD", "SFP", "SLARP", "SLIP", "SMTP", "SNA",
    "SNAP", "SNMP", "SOF", "SRAM", "SSH", "SSID", "STP", "SYN", "TDM", "TFTP", "TIA", "TOFU",
    "UDP", "URL", "URI", "USB", "UTP", "VC", "VLAN", "VLSM", "VPN", "W3C", "WAN", "WEP", "WPA",
    "WWW",
];

/// `flect.Pluralize` (v1.0.3) for a lowercase ASCII word, step for step:
/// 1. a dictionary singular gives its plural; a known plural is returned as is;
/// 2. else the first matching suffix rule applies. flect's rule list is, for every non-`Exact`
///    dictionary entry from last to first and then every suffix rule in order, a rule that keeps
///    a word ending in the plural, then one that replaces the singular ending with the plural;
/// 3. else a word ending in `s` is kept, and any other gets `s`.
///
/// flect matches rules against the word upper-cased when the whole word is an acronym, so `ssh`
/// gives `sshs` and `dns` gives `dnsDNSes` (the prefix is kept lowercase); this is reproduced.
fn pluralize(word: &str) -> String {
    if word.is_empty() {
        return String::new();
    }
    if let Some(&(_, plural, _, _)) = DICTIONARY.iter().find(|e| e.0 == word) {
        return plural.to_string();
    }
    let known_plural =
        |&(_, plural, alt, entry): &(&str, &str, &str, Entry)| entry != OneWay && (plural == word || alt == word);
    if DICTIONARY.iter().any(known_plural) {
        return word.to_string();
    }
    let upper = word.to_ascii_uppercase();
    let part = if ACRONYMS.contains(&upper.as_str()) { upper.as_str() } else { word };
    let rules = DICTIONARY
        .iter()
        .rev()
        .filter(|e| e.3 != Exact)
        .map(|&(singular, plural, _, _)| (singular, plural))
        .chain(SUFFIX_RULES.iter().copied())
        .flat_map(|(singular, plural)| [(plural, plural), (singular, plural)]);
    for (suffix, replacement) in rules {
        if let Some(stem) = part.strip_suffix(suffix) {
            // flect's Ident.ReplaceSuffix: the word minus `part` (nothing, or all of it for an
            // acronym) followed by the rewritten part.
            let prefix = word.strip_suffix(part).unwrap_or(word);
            return format!("{prefix}{stem}{replacement}");
        }
    }
    if word.ends_with('s') { word.to_string() } else { format!("{word}s") }
}

/// `--image`: the operand container's image, written into the Deployment the controller creates
/// and into the default of the `<KIND>_IMAGE` environment variable. Checked loosely against the
/// reference grammar `[registry[:port]/]name[:tag][@digest]`, enough to catch typos.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Image(String);

impl Image {
    /// Validates `--image`.
    pub fn parse(s: &str) -> Result<Self> {
        let rule = if s.is_empty() {
            "an image cannot be empty"
        } else if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            "an image cannot contain whitespace"
        } else if let Err(rule) = Self::check_reference(s) {
            rule
        } else {
            return Ok(Self(s.to_string()));
        };
        let rule = format!("{rule}; an image looks like [registry/]name[:tag][@digest]");
        Err(invalid("--image", s, rule, "\"memcached:1.6.26-alpine3.19\""))
    }

    fn check_reference(s: &str) -> Result<(), &'static str> {
        let (rest, digest) = s.split_once('@').unwrap_or((s, ""));
        if s.contains('@') {
            let (algorithm, hex) = digest.split_once(':').unwrap_or(("", ""));
            let ok = |p: &str, extra: &str| {
                !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
            };
            if !ok(algorithm, "+._-") || !ok(hex, "") {
                return Err("a digest must look like sha256:<hex>");
            }
        }
        let slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match rest[slash..].rfind(':') {
            Some(i) => (&rest[..slash + i], Some(&rest[slash + i + 1..])),
            None => (rest, None),
        };
        if let Some(tag) = tag {
            let ok_char = |c: char| c.is_ascii_alphanumeric() || "_.-".contains(c);
            if tag.is_empty() || tag.len() > 128 || tag.starts_with(['.', '-']) || !tag.chars().all(ok_char) {
                return Err("a tag must be 1 to 128 letters, digits, '_', '.' or '-', \
                    not starting with '.' or '-'");
            }
        }
        let mut parts: Vec<&str> = name.split('/').collect();
        let first = parts[0];
        if parts.len() > 1 && (first.contains(['.', ':']) || first == "localhost") {
            let (host, port) = first.split_once(':').unwrap_or((first, "1"));
            let host_ok = is_label(&host.to_ascii_lowercase().replace('.', "-"), false);
            if !host_ok || port.is_empty() || !port.bytes().all(|c| c.is_ascii_digit()) {
                return Err("a registry must be a host name with an optional :port");
            }
            parts.remove(0);
        }
        let component_ok = |p: &&str| {
            let b = p.as_bytes();
            let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            b.first().is_some_and(alnum)
                && b.last().is_some_and(alnum)
                && b.iter().all(|c| alnum(c) || b"._-".contains(c))
        };
        if !parts.iter().all(component_ok) {
            return Err("each '/'-separated part of the image name must be lowercase letters and \
                digits, optionally separated by '.', '_' or '-'");
        }
        Ok(())
    }
}

/// `--image-container-port`: the operand container's `containerPort`, an int32 that Kubernetes
/// limits to 1–65535.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ContainerPort(u16);

impl ContainerPort {
    /// Parses a decimal port number from 1 to 65535.
    pub fn parse(s: &str) -> Result<Self> {
        match s.parse::<u16>() {
            Ok(port) if port > 0 && s.bytes().all(|c| c.is_ascii_digit()) => Ok(Self(port)),
            _ => Err(invalid(
                "--image-container-port",
                s,
                "a container port must be a whole number from 1 to 65535",
                "\"11211\"",
            )),
        }
    }

    /// The port number.
    pub fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for ContainerPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `--run-as-user`: the operand's `securityContext.runAsUser`, an int64 UID that Kubernetes
/// requires to be non-negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RunAsUser(i64);

/// `--owner`: goes into the license header of every generated file, so one line of printable
/// text.
pub fn check_owner(owner: &str) -> Result<()> {
    if owner.chars().any(char::is_control) {
        return Err(invalid(
            "--owner",
            owner,
            "an owner must be one line of text, without control characters (a newline, a tab, …)",
            "\"The Memcached Authors\"",
        ));
    }
    Ok(())
}

impl RunAsUser {
    /// The largest user ID Kubernetes accepts (`IsValidUserID`).
    const MAX: i64 = 2_147_483_647;

    /// Parses a decimal UID from 1 to 2147483647. Not 0: the generated Deployment runs under
    /// the restricted Pod Security Standard (`runAsNonRoot: true`), where root cannot start.
    pub fn parse(s: &str) -> Result<Self> {
        match s.parse::<i64>() {
            Ok(uid) if uid > 0 && uid <= Self::MAX && s.bytes().all(|c| c.is_ascii_digit()) => Ok(Self(uid)),
            _ => Err(invalid(
                "--run-as-user",
                s,
                format_args!(
                    "a user ID must be a whole number from 1 to {}, as Kubernetes requires (0, root, \
                     cannot run under the restricted Pod Security Standard)",
                    Self::MAX
                ),
                "\"1001\"",
            )),
        }
    }

    /// The UID.
    pub fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for RunAsUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `--image-container-command`: the operand container's `command`, given as comma-separated
/// arguments (kubebuilder's deploy-image format); each is trimmed and none may be empty.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ContainerCommand(Vec<String>);

impl ContainerCommand {
    /// Splits `"memcached,--memory-limit=64,-v"` into its arguments.
    pub fn parse(s: &str) -> Result<Self> {
        let args: Vec<String> = s.split(',').map(|a| a.trim().to_string()).collect();
        let rule = if s.trim().is_empty() {
            "a command cannot be empty".to_string()
        } else if let Some(i) = args.iter().position(String::is_empty) {
            format!("a command is comma-separated arguments, none empty, and argument {} is empty", i + 1)
        } else if let Some(i) = args.iter().position(|a| a.chars().any(char::is_control)) {
            format!("argument {} contains a control character (a newline, a tab, …)", i + 1)
        } else {
            return Ok(Self(args));
        };
        let example = "\"memcached,--memory-limit=64,-o,modern,-v\"";
        Err(invalid("--image-container-command", s, rule, example))
    }

    /// The arguments, in order.
    pub fn args(&self) -> &[String] {
        &self.0
    }

    /// The arguments, in order, by value.
    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

/// The arguments joined by `,`: the form `parse` accepts.
impl fmt::Display for ContainerCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_port_names() {
        let kind = |k| Kind::parse(k).unwrap();
        assert_eq!(kind("Memcached").short_name().as_deref(), Some("mc"));
        assert_eq!(kind("HealthCheckPolicy").short_name().as_deref(), Some("hcp"));
        assert_eq!(kind("Secret").short_name(), None, "sc is kubectl's storageclasses");
        assert_eq!(kind("Memcached").port_name(), "memcached");
        assert_eq!(kind("VeryLongKindNameForPorts").port_name(), "very-long-kind");
    }

    /// Asserts each whitespace-separated word of `ok` parses and each of `bad` does not.
    fn check<T: fmt::Debug>(parse: impl Fn(&str) -> Result<T>, ok: &str, bad: &str) {
        for s in ok.split_whitespace() {
            assert!(parse(s).is_ok(), "should accept {s:?}: {:?}", parse(s));
        }
        for s in bad.split_whitespace() {
            assert!(parse(s).is_err(), "should reject {s:?}: {:?}", parse(s));
        }
    }

    fn err<T: fmt::Debug>(r: Result<T>) -> String {
        r.unwrap_err().to_string()
    }

    fn domain() -> Domain {
        Domain::parse("example.com").unwrap()
    }

    #[test]
    fn domain_rules() {
        let ok = "example.com my.domain a x-1.io 1a.b2 a.b.c.d";
        let bad = "Example.com -a.com a-.com a..com .a a. a_b.com é.com";
        check(Domain::parse, ok, bad);
        assert_eq!(domain().to_string(), "example.com");
        assert_eq!(
            err(Domain::parse("Example.com")),
            "invalid --domain \"Example.com\": a domain must be a lowercase RFC 1123 subdomain: \
             labels of a-z, 0-9 and '-', separated by '.', each starting and ending with a letter \
             or digit (e.g. \"example.com\")"
        );
        assert!(err(Domain::parse("")).contains("a domain cannot be empty"));
        assert!(Domain::parse(&"a".repeat(63)).is_ok());
        let e = err(Domain::parse(&format!("{}.io", "a".repeat(64))));
        assert!(e.contains("label of a domain must be at most 63 characters"), "{e}");
        let long = vec!["a".repeat(63); 4].join(".");
        assert!(err(Domain::parse(&long)).contains("at most 253 characters (it has 255)"));
    }

    #[test]
    fn project_name_rules() {
        let ok = "memcached-operator a op2 my--op";
        let bad = "1op op- -op My-Op my_op my.op type self test";
        check(ProjectName::parse, ok, bad);
        assert!(err(ProjectName::parse("")).contains("a project name cannot be empty"));
        let p = ProjectName::parse("memcached-operator").unwrap();
        assert_eq!((p.as_str(), p.crate_name().as_str()), ("memcached-operator", "memcached_operator"));
        assert!(ProjectName::parse(&"a".repeat(63)).is_ok());
        assert!(err(ProjectName::parse(&"a".repeat(64))).contains("at most 63 characters (it has 64)"));
        assert!(err(ProjectName::parse("build")).contains("reserved by Cargo"));
        assert!(err(ProjectName::parse("match")).contains("\"match\" is a Rust keyword"));
        let e = err(ProjectName::parse("My_Operator"));
        assert!(e.starts_with("invalid project name \"My_Operator\": a project name must be"));
        assert!(e.ends_with("(e.g. \"memcached-operator\"); pass --project-name to choose another"));
    }

    #[test]
    fn project_name_from_dir() {
        let p = ProjectName::from_dir(Path::new("/home/me/Memcached-Operator")).unwrap();
        assert_eq!(p.as_str(), "memcached-operator");
        let e = err(ProjectName::from_dir(Path::new("/home/me/My_Operator")));
        assert!(e.contains("\"my_operator\" (the lowercased name of directory"), "{e}");
        assert!(e.contains("pass --project-name"), "{e}");
        assert!(err(ProjectName::from_dir(Path::new("/"))).contains("pass --project-name"));
    }

    #[test]
    fn group_rules() {
        let ok = "cache foo-bar foo.bar apps2";
        let bad = "Cache -cache cache- ca_che a..b 1cache type mod";
        check(|s| Group::parse(s, &domain()), ok, bad);
        let g = Group::parse("cache", &domain()).unwrap();
        assert_eq!(g.qualified(&domain()), "cache.example.com");
        assert_eq!(g.module_name(), "cache");
        for (group, module) in [("foo-bar", "foo_bar"), ("foo.bar", "foo_bar")] {
            assert_eq!(Group::parse(group, &domain()).unwrap().module_name(), module);
        }
        assert_eq!(
            err(Group::parse("Cache", &domain())),
            "invalid --group \"Cache\": \"Cache.example.com\" must be a lowercase RFC 1123 \
             subdomain: labels of a-z, 0-9 and '-', separated by '.', each starting and ending \
             with a letter or digit (e.g. --group cache)"
        );
        assert!(err(Group::parse("", &domain())).contains("a group cannot be empty"));
        assert!(err(Group::parse("1cache", &domain())).contains("start with a letter"));
        assert!(err(Group::parse("type", &domain())).contains("\"type\" is a keyword"));
        assert!(err(Group::parse(&"g".repeat(64), &domain())).contains("at most 63"));
        let long = vec!["g".repeat(60); 4].join(".");
        assert!(err(Group::parse(&long, &domain())).contains("at most 253 characters"));
    }

    #[test]
    fn version_rules() {
        let ok = "v1 v2 v10 v1alpha1 v2beta3 v1beta10 v12alpha34";
        let bad = "1 v v0 v01 v1alpha v1beta0 v1alpha01 V1 v1gamma1 v1-alpha1 foo v1alpha1beta1";
        check(Version::parse, ok, bad);
        assert!(Version::parse("v1alpha1 ").is_err());
        assert_eq!(Version::parse("v1alpha1").unwrap().module_name(), "v1alpha1");
        assert!(
            err(Version::parse("v1alpha"))
                .starts_with("invalid --version \"v1alpha\": a version must look like v1, v1alpha1 or v2beta3")
        );
        assert!(err(Version::parse("")).contains("cannot be empty (e.g. \"v1alpha1\")"));
        assert!(err(Version::parse(&format!("v{}", "9".repeat(63)))).contains("at most 63"));
    }

    #[test]
    fn kind_rules() {
        let ok = "Memcached A HTTPRoute Ec2Instance FirstMate Types";
        let bad = "memcached 1Kind Kind- Mem_cached Mem-cached Kïnd Ki.nd Self Option Type Match";
        check(Kind::parse, ok, bad);
        assert!(Kind::parse("Ki nd").is_err());
        assert_eq!(
            err(Kind::parse("memcached")),
            "invalid --kind \"memcached\": a kind must be PascalCase, starting with an uppercase \
             letter and containing only letters and digits (e.g. \"Memcached\")"
        );
        assert!(err(Kind::parse("")).contains("a kind cannot be empty"));
        assert!(Kind::parse(&"A".repeat(63)).is_ok());
        assert!(err(Kind::parse(&"A".repeat(64))).contains("at most 63 characters (it has 64)"));
        let e = err(Kind::parse("Type"));
        assert!(e.contains("\"type\" is a keyword") && e.contains("\"TypeConfig\""), "{e}");
        assert!(err(Kind::parse("Self")).contains("Self or a Rust prelude name"));
        assert!(err(Kind::parse(&"Ab".repeat(31))).contains("kebab-case form"));
    }

    #[test]
    fn kind_spellings() {
        #[rustfmt::skip]
        let cases = [
            // kind, lower, snake, screaming, kebab
            ("Memcached", "memcached", "memcached", "MEMCACHED", "memcached"),
            ("HealthCheckPolicy", "healthcheckpolicy", "health_check_policy", "HEALTH_CHECK_POLICY",
             "health-check-policy"),
            ("HTTPRoute", "httproute", "http_route", "HTTP_ROUTE", "http-route"),
            ("Ec2Instance", "ec2instance", "ec2_instance", "EC2_INSTANCE", "ec2-instance"),
            ("V1Thing", "v1thing", "v1_thing", "V1_THING", "v1-thing"),
            ("API", "api", "api", "API", "api"),
        ];
        for (kind, lower, snake, screaming, kebab) in cases {
            let k = Kind::parse(kind).unwrap();
            assert_eq!([k.lower(), k.snake(), k.screaming(), k.kebab()], [lower, snake, screaming, kebab]);
        }
    }

    #[test]
    fn plural_rules() {
        let ok = "memcacheds admirales my-things2 a";
        let bad = "Memcacheds 1things things- -things th_ings th.ings";
        check(Plural::parse, ok, bad);
        assert!(err(Plural::parse("")).contains("a plural cannot be empty"));
        assert_eq!(
            err(Plural::parse("Memcacheds")),
            "invalid --plural \"Memcacheds\": a plural must be a lowercase RFC 1035 label: a-z, \
             0-9 and '-', starting with a letter and ending with a letter or digit \
             (e.g. \"memcacheds\")"
        );
        assert!(err(Plural::parse(&"a".repeat(64))).contains("at most 63 characters"));
    }

    #[test]
    fn plural_for_kind() {
        let kind = Kind::parse("HealthCheckPolicy").unwrap();
        let plural = Plural::for_kind(&kind).unwrap();
        assert_eq!(plural.as_str(), "healthcheckpolicies");
        assert!(plural.is_regular_for(&kind));
        assert!(!Plural::parse("healthchecks").unwrap().is_regular_for(&kind));
        // flect's acronym quirk: kubebuilder fails here too.
        let e = err(Plural::for_kind(&Kind::parse("Dns").unwrap()));
        assert!(e.contains("\"dnsDNSes\"") && e.contains("--plural dnses"), "{e}");
        let e = err(Plural::for_kind(&Kind::parse(&"A".repeat(63)).unwrap()));
        assert!(e.contains("pass --plural (e.g. --plural memcacheds)"), "{e}");
    }

    /// Pairs from kubebuilder's docs and flect v1.0.3's own test table (`flect_test.go`),
    /// checked against flect itself; like flect's test, each plural must also map to itself.
    #[test]
    fn pluralize_matches_flect() {
        #[rustfmt::skip]
        let table = [
            ("memcached", "memcacheds"), ("busybox", "busyboxes"), ("wordpress", "wordpresses"),
            ("healthcheckpolicy", "healthcheckpolicies"), ("firstmate", "firstmates"),
            ("policy", "policies"), ("key", "keys"), ("fish", "fish"), ("sheep", "sheep"),
            ("helmswoman", "helmswomen"), ("person", "people"), ("child", "children"),
            ("man", "men"), ("datum", "data"), ("octopus", "octupuses"), ("ox", "oxen"),
            ("box", "boxes"), ("mouse", "mice"), ("spokesman", "spokesmen"),
            ("salesperson", "salespeople"), ("equipment", "equipment"), ("news", "news"),
            ("calf", "calves"), ("dwarf", "dwarfs"), ("knife", "knives"), ("leaf", "leaves"),
            ("safe", "saves"), ("thief", "thieves"), ("beef", "beef"), ("chief", "chiefs"),
            ("archive", "archives"), ("day", "days"), ("hobby", "hobbies"), ("abbey", "abbeys"),
            ("guy", "guys"), ("obsequy", "obsequies"), ("proxy", "proxies"), ("chateau", "chateaux"),
            ("bureau", "bureaus"), ("tetrahedron", "tetrahedra"), ("stadium", "stadiums"),
            ("bacterium", "bacteria"), ("museum", "museums"), ("maximum", "maxima"),
            ("spectrum", "spectra"), ("nebula", "nebulae"), ("antenna", "antennas"),
            ("media", "media"), ("multimedia", "multimedia"), ("switch", "switches"),
            ("headache", "headaches"), ("wish", "wishes"), ("bus", "buses"), ("status", "statuses"),
            ("virus", "viruses"), ("house", "houses"), ("quiz", "quizzes"), ("buzz", "buzzes"),
            ("waltz", "waltzes"), ("prize", "prizes"), ("address", "addresses"),
            ("database", "databases"), ("portfolio", "portfolios"), ("piano", "pianos"),
            ("hello", "hellos"), ("buffalo", "buffaloes"), ("photo", "photos"),
            ("potato", "potatoes"), ("zoo", "zoos"), ("index", "indices"), ("complex", "complexes"),
            ("matrix", "matrices"), ("device", "devices"), ("service", "services"),
            ("axis", "axes"), ("tax", "taxes"), ("ellipsis", "ellipses"), ("analysis", "analyses"),
            ("diagnosis", "diagnoses"), ("synopsis", "synopses"), ("psi", "psis"),
            ("api", "apis"), ("html", "htmls"), ("ssh", "sshs"), ("eia", "eias"),
        ];
        for (singular, plural) in table {
            assert_eq!(pluralize(singular), plural, "pluralize({singular})");
            assert_eq!(pluralize(plural), plural, "pluralize({plural})");
        }
        // Alternatives are recognised as plurals; acronyms ending in S hit flect's quirk.
        assert_eq!(pluralize("indexes"), "indexes");
        assert_eq!(pluralize("octopi"), "octopi");
        assert_eq!(pluralize("https"), "httpsHTTPSes");
        assert_eq!(pluralize(""), "");
    }

    #[test]
    fn image_rules() {
        let ok = "memcached memcached:1.6.26-alpine3.19 docker.io/library/memcached:1.6 \
                  quay.io/example/memcached@sha256:abc123 localhost:5000/op:v1 a/b/c:latest \
                  Registry.Example.com/x ghcr.io/a_b/c-d.e:1_0";
        let bad = "Memcached memcached: memcached:-x a//b /a a/ a@sha256 a@:abc example.com:/x";
        check(Image::parse, ok, bad);
        assert!(Image::parse("memcached\t").is_err());
        assert_eq!(Image::parse("memcached:1.6").unwrap().as_str(), "memcached:1.6");
        let e = err(Image::parse("mem cached"));
        assert!(e.starts_with("invalid --image \"mem cached\": an image cannot contain whitespace"));
        assert!(e.ends_with("(e.g. \"memcached:1.6.26-alpine3.19\")"), "{e}");
        assert!(err(Image::parse("")).contains("an image cannot be empty"));
    }

    #[test]
    fn container_port_rules() {
        let bad = "0 65536 -1 +80 http 8o";
        check(ContainerPort::parse, "1 80 11211 65535", bad);
        assert!(ContainerPort::parse("").is_err() && ContainerPort::parse(" 80").is_err());
        assert_eq!(ContainerPort::parse("11211").unwrap().get(), 11211);
        assert_eq!(ContainerPort::parse("65535").unwrap().to_string(), "65535");
        assert_eq!(
            err(ContainerPort::parse("0")),
            "invalid --image-container-port \"0\": a container port must be a whole number from \
             1 to 65535 (e.g. \"11211\")"
        );
    }

    #[test]
    fn owners_are_one_line() {
        assert!(check_owner("The Memcached Authors").is_ok());
        assert!(check_owner("").is_ok());
        for bad in ["ACME\ncompile_error!(\"x\");", "a\tb", "\u{1b}[31m"] {
            assert!(err(check_owner(bad)).contains("one line of text"), "{bad:?}");
        }
    }

    #[test]
    fn run_as_user_rules() {
        let bad = "-1 +1 0 2147483648 4294967296 9223372036854775807 root 1.5";
        check(RunAsUser::parse, "1 1001 2147483647", bad);
        assert!(RunAsUser::parse("").is_err());
        assert_eq!(RunAsUser::parse("1001").unwrap().get(), 1001);
        let e = err(RunAsUser::parse("-1"));
        assert!(e.starts_with("invalid --run-as-user \"-1\": a user ID must be a whole number"));
        assert!(e.ends_with("(e.g. \"1001\")"), "{e}");
    }

    #[test]
    fn container_command_rules() {
        let bad = "a,,b a, ,a";
        check(ContainerCommand::parse, "sleep a,b", bad);
        for bad in ["", " ", "a, ,b"] {
            assert!(ContainerCommand::parse(bad).is_err(), "{bad:?}");
        }
        assert!(err(ContainerCommand::parse("")).contains("a command cannot be empty"));
        let c = ContainerCommand::parse("memcached, --memory-limit=64 ,-o,modern,-v").unwrap();
        assert_eq!(c.args(), ["memcached", "--memory-limit=64", "-o", "modern", "-v"]);
        assert_eq!(c.to_string(), "memcached,--memory-limit=64,-o,modern,-v");
        assert_eq!(c.into_vec().len(), 5);
        let e = err(ContainerCommand::parse("memcached,,-v"));
        assert!(e.contains("\"memcached,,-v\"") && e.contains("argument 2 is empty"), "{e}");
        assert!(e.ends_with("(e.g. \"memcached,--memory-limit=64,-o,modern,-v\")"), "{e}");
    }

    #[test]
    fn from_str_works_for_flag_parsing() {
        assert_eq!("Memcached".parse::<Kind>().unwrap().snake(), "memcached");
        assert!("v1alpha".parse::<Version>().is_err());
        assert_eq!("80".parse::<ContainerPort>().unwrap().get(), 80);
    }
}
