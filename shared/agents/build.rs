//! Embeds the repository's `skills/` folder in the crate, so a binary carries the skills it was
//! built with and needs no folder beside it (`SkillLibrary::embedded`). The generated file
//! lists, for each skill folder that has a `SKILL.md`, that file and its `references/*.md`,
//! each through `include_str!`, in name order.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn sorted(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    paths.sort();
    paths
}

fn main() {
    // The manifest's folder as cargo gives it to this run, not as it was when the script was
    // compiled: a build script compiled for one checkout must not read another's skills.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("../../skills");
    assert!(root.is_dir(), "the skills folder {} is missing", root.display());
    println!("cargo:rerun-if-changed={}", root.display());
    let mut out = String::from("/// The skills folder as built: (folder, SKILL.md, [(reference file, text)]).\n");
    out.push_str("pub(crate) const EMBEDDED: &[Folder] = &[\n");
    for folder in sorted(&root).into_iter().filter(|p| p.join("SKILL.md").is_file()) {
        let name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let _ = writeln!(out, "    ({name:?}, include_str!({:?}), &[", folder.join("SKILL.md").display().to_string());
        for reference in sorted(&folder.join("references")) {
            let file = reference.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if file.ends_with(".md") {
                let _ = writeln!(out, "        ({file:?}, include_str!({:?})),", reference.display().to_string());
            }
        }
        out.push_str("    ]),\n");
    }
    out.push_str("];\n");
    let target = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("embedded_skills.rs");
    std::fs::write(target, out).expect("write the embedded skills");
}
