//! The embedded templates and their rendering.
//!
//! `templates/` mirrors the generated tree. Under each scaffold root (`init`, `resource`,
//! `controller-operand`, `controller-skeleton`) a file
//! named `X.tera` renders to the generated file `X`, and a file named `X@MARKER.tera` renders to
//! a fragment inserted into `X` just before its `+memop:scaffold:MARKER` line. Path segments of
//! the form `__name__` are replaced with the context's string value `name` (for example
//! `src/controller/__kind_snake__.rs.tera`). `templates/_partials/` holds pieces that templates
//! include; they render to nothing on their own.

use anyhow::{Result, anyhow, bail};
use include_dir::{Dir, include_dir};
use tera::{Context, Tera};

static TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");

const SUFFIX: &str = ".tera";

/// One template of a scaffold root, already classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Renders to the whole file at `path`.
    File { template: String, path: String },
    /// Renders to a fragment inserted before `marker` in the file at `path`.
    Fragment { template: String, path: String, marker: String },
}

/// Every template memop ships, parsed once.
pub struct Templates {
    tera: Tera,
    names: Vec<String>,
}

impl Templates {
    pub fn load() -> Result<Self> {
        let mut sources = Vec::new();
        collect(&TEMPLATES, &mut sources);
        sources.sort();
        let mut tera = Tera::default();
        // Generated files are code and YAML, never HTML: no escaping.
        tera.autoescape_on(vec![]);
        tera.add_raw_templates(sources.iter().map(|(n, s)| (n.as_str(), s.as_str())))
            .map_err(|e| anyhow!("memop's own templates do not parse: {}", chain(&e)))?;
        let names = sources.into_iter().map(|(n, _)| n).collect();
        Ok(Self { tera, names })
    }

    /// Renders one template by its name (its path under `templates/`).
    pub fn render(&self, template: &str, ctx: &Context) -> Result<String> {
        self.tera
            .render(template, ctx)
            .map_err(|e| anyhow!("rendering template {template}: {}", chain(&e)))
    }

    /// The templates under `root/`, with their output paths resolved from `ctx`.
    pub fn entries(&self, root: &str, ctx: &Context) -> Result<Vec<Entry>> {
        let prefix = format!("{root}/");
        let mut entries = Vec::new();
        for name in self.names.iter().filter(|n| n.starts_with(&prefix)) {
            let relative = &name[prefix.len()..name.len() - SUFFIX.len()];
            let resolved = substitute(relative, ctx)?;
            entries.push(match resolved.rsplit_once('@') {
                Some((path, marker)) => Entry::Fragment {
                    template: name.clone(),
                    path: path.to_string(),
                    marker: marker.to_string(),
                },
                None => Entry::File { template: name.clone(), path: resolved },
            });
        }
        if entries.is_empty() {
            bail!("memop has no templates under {root}/");
        }
        Ok(entries)
    }
}

fn collect(dir: &'static Dir<'static>, out: &mut Vec<(String, String)>) {
    for file in dir.files() {
        let name = file.path().to_string_lossy().replace('\\', "/");
        if let (true, Some(text)) = (name.ends_with(SUFFIX), file.contents_utf8()) {
            out.push((name, text.to_string()));
        }
    }
    for sub in dir.dirs() {
        collect(sub, out);
    }
}

/// Replaces `__name__` path segments (or parts of segments) with context strings.
fn substitute(path: &str, ctx: &Context) -> Result<String> {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find("__") {
        let after = &rest[start + 2..];
        let Some(len) = after.find("__") else { break };
        let key = &after[..len];
        let value = ctx
            .get(key)
            .and_then(|v| v.as_str())
            .ok_or_else(|| anyhow!("template path {path} names `{key}`, which is not a string in the context"))?;
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = &after[len + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Tera hides the cause of a failure in the error's source chain.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_placeholders_in_paths() {
        let mut ctx = Context::new();
        ctx.insert("kind_snake", "memcached");
        ctx.insert("group_module", "cache");
        assert_eq!(
            substitute("src/api/__group_module__/__kind_snake__.rs", &ctx).unwrap(),
            "src/api/cache/memcached.rs"
        );
        assert_eq!(substitute("Makefile", &ctx).unwrap(), "Makefile");
        assert!(substitute("src/__missing__.rs", &ctx).is_err());
    }

    #[test]
    fn every_embedded_template_parses() {
        let templates = Templates::load().unwrap();
        assert!(templates.names.iter().any(|n| n.starts_with("init/")));
    }
}
