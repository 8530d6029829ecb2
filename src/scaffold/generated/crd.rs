//! The versions of a CRD file as the generated project's `make manifests` writes it: a kind
//! served in several versions has one CRD whose `spec.versions` lists them in order of name,
//! exactly one of them stored. memop edits that list as text, so that everything else in the
//! file (the user's fields, as `make manifests` last wrote them) stays byte for byte.

use anyhow::{Result, bail};

/// Where the list of versions starts: `versions` is the last field of a CRD's spec, and the
/// spec the last field of the file.
const VERSIONS: &str = "\n  versions:\n";

/// `current` (a CRD file) with the version of `rendered` (a one-version CRD file of the same
/// kind) added, or put in place of the version of that name, and `storage` the stored one.
pub(super) fn add_version(current: &str, rendered: &str, storage: &str) -> Result<String> {
    let (head, mut blocks) = split(current)?;
    let (_, new) = split(rendered)?;
    let [new] =
        <[String; 1]>::try_from(new).map_err(|_| anyhow::anyhow!("memop's CRD template has several versions"))?;
    let name = version_name(&new).unwrap_or_default().to_string();
    blocks.retain(|block| version_name(block) != Some(name.as_str()));
    blocks.push(new);
    blocks.sort_by(|a, b| version_name(a).cmp(&version_name(b)));
    if !blocks.iter().any(|block| version_name(block) == Some(storage)) {
        bail!("the CRD has no version {storage} to store objects as");
    }
    let mut out = head.to_string();
    for block in blocks {
        let stored = version_name(&block) == Some(storage);
        for line in block.lines() {
            let line = match line {
                "    storage: true" | "    storage: false" => format!("    storage: {stored}"),
                _ => line.to_string(),
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    Ok(out)
}

/// The version a CRD file stores objects as.
pub fn storage_version(crd: &str) -> Option<String> {
    let (_, blocks) = split(crd).ok()?;
    blocks
        .iter()
        .find(|block| block.lines().any(|line| line == "    storage: true"))
        .and_then(|block| version_name(block))
        .map(str::to_string)
}

/// The file up to its list of versions, and one block of lines per version.
fn split(crd: &str) -> Result<(&str, Vec<String>)> {
    let Some(at) = crd.find(VERSIONS) else {
        bail!("the CRD file has no `spec.versions` list where `make manifests` writes it");
    };
    let (head, rest) = crd.split_at(at + VERSIONS.len());
    let mut blocks: Vec<String> = Vec::new();
    for line in rest.lines() {
        match blocks.last_mut() {
            _ if line.starts_with("  - ") => blocks.push(String::new()),
            Some(_) if line.starts_with("    ") => {}
            _ => bail!("the CRD file has something after its list of versions (`{line}`); run `make manifests`"),
        }
        let block = blocks.last_mut().expect("a block was started");
        block.push_str(line);
        block.push('\n');
    }
    Ok((head, blocks))
}

/// The `name` of one version's block.
fn version_name(block: &str) -> Option<&str> {
    block.lines().find_map(|line| line.strip_prefix("    name: ").or_else(|| line.strip_prefix("  - name: ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(versions: &[(&str, bool)]) -> String {
        let mut out = String::from("# header\n---\nspec:\n  group: g\n  versions:\n");
        for (name, storage) in versions {
            out.push_str(&format!(
                "  - additionalPrinterColumns:\n    - jsonPath: .x\n      name: X\n    name: {name}\n    schema: {{}}\n    served: true\n    storage: {storage}\n"
            ));
        }
        out
    }

    #[test]
    fn a_version_is_added_in_order_of_name_with_one_stored() {
        let merged = add_version(&crd(&[("v1alpha1", true)]), &crd(&[("v1", true)]), "v1alpha1").unwrap();
        assert_eq!(merged, crd(&[("v1", false), ("v1alpha1", true)]));
        let moved = add_version(&merged, &crd(&[("v2", true)]), "v2").unwrap();
        assert_eq!(moved, crd(&[("v1", false), ("v1alpha1", false), ("v2", true)]));
        assert_eq!(storage_version(&moved).as_deref(), Some("v2"));
    }

    #[test]
    fn a_version_already_there_is_replaced() {
        let current = crd(&[("v1", false), ("v1alpha1", true)]);
        assert_eq!(add_version(&current, &crd(&[("v1", true)]), "v1alpha1").unwrap(), current);
    }

    #[test]
    fn a_file_not_laid_out_as_make_manifests_writes_it_is_refused() {
        let trailing = format!("{}status: {{}}\n", crd(&[("v1", true)]));
        assert!(add_version(&trailing, &crd(&[("v2", true)]), "v1").is_err());
        assert!(add_version("kind: CustomResourceDefinition\n", &crd(&[("v2", true)]), "v2").is_err());
        assert!(add_version(&crd(&[("v1", true)]), &crd(&[("v2", true)]), "v3").is_err());
    }
}
