//! What an operand controller deploys: `--image`, `--image-container-port`,
//! `--image-container-command` and `--run-as-user`; and `--owner`, which goes into headers.

use std::fmt;

use anyhow::Result;

use super::{invalid, is_label};

/// `--image`: the operand container's image, written into the Deployment the controller creates
/// and into the default of the `<KIND>_IMAGE` environment variable. Checked loosely against the
/// reference grammar `[registry[:port]/]name[:tag][@digest]`, enough to catch typos.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Image(pub(super) String);

impl Image {
    /// Validates `--image`.
    pub fn parse(s: &str) -> Result<Self> {
        let rule = if s.is_empty() {
            "an image cannot be empty"
        } else if s.chars().any(|c| c.is_whitespace() || super::is_hidden(c)) {
            "an image cannot contain whitespace or invisible characters"
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
    if owner.chars().any(super::is_hidden) {
        return Err(invalid(
            "--owner",
            owner,
            "an owner must be one line of text, without control or invisible formatting characters (a newline, a \
             tab, a bidi control, a zero-width joiner, …)",
            "\"The Memcached Authors\"",
        ));
    }
    Ok(())
}

/// The project's repository (`init --repo`), as Cargo.toml's `repository` URL: kubebuilder's Go
/// module path (`github.com/example/memcached-operator`) gets `https://` in front; a URL is kept.
/// It goes into a TOML string, so it is held to the characters of a URL.
pub fn repository(repo: &str) -> Result<String> {
    let url = if repo.contains("://") { repo.to_string() } else { format!("https://{repo}") };
    let (scheme, rest) = url.split_once("://").unwrap_or_default();
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=%".contains(c);
    let host = rest.split('/').next().unwrap_or_default();
    if !matches!(scheme, "https" | "http" | "ssh" | "git") || host.is_empty() || !rest.chars().all(allowed) {
        return Err(invalid(
            "--repo",
            repo,
            "a repository is a URL (https://, http://, ssh:// or git://) or a Go-style module path, \
             of URL characters only",
            "\"github.com/example/memcached-operator\"",
        ));
    }
    Ok(url)
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
        } else if let Some(i) = args.iter().position(|a| a.chars().any(super::is_hidden)) {
            format!(
                "argument {} contains a control or invisible formatting character (a newline, a tab, a bidi \
                 control, a zero-width joiner, …)",
                i + 1
            )
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
