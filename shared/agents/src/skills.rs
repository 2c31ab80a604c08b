//! Skills on disk (Agent Skills format) and the rules for loading them.
//!
//! A skill is a folder `skills/<name>/` with `SKILL.md` (front matter: `name` equal to the
//! folder, `description`, `allowed-tools`, `metadata.version`, `metadata.role`) and
//! `references/*.md`. [`SkillLibrary::load`] reads and checks every folder once. At run time
//! the model loads skills and references through the runtime's `load_skill` and
//! `load_reference` tools; the runtime records the real sequence ([`LoadEvent`]) and
//! [`SkillRule::check`] rejects a missing, duplicate, out-of-order or unapproved load.
//! Skill text is method: it is never evidence and never enters an output as a citation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod embedded {
    /// One skill folder as built: its name, its `SKILL.md`, and its references (file, text).
    pub(crate) type Folder = (&'static str, &'static str, &'static [(&'static str, &'static str)]);
    include!(concat!(env!("OUT_DIR"), "/embedded_skills.rs"));
}

use harmonia_contracts::Role;

use crate::tools::names;

/// What the spec lets one skill give: the role that loads it, the tools it may allow (of that
/// role's allow-list) and the references it may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The skill's name (its folder).
    pub skill: &'static str,
    /// The one role that may load it.
    pub role: Role,
    /// The most tools its `allowed-tools` may name.
    pub tools: &'static [&'static str],
    /// The reference files it may hold.
    pub references: &'static [&'static str],
}

/// The spec's table of skills (`skills/README.md`): a skills folder is checked against it when
/// it is loaded, and one that grants more is refused.
pub const GRANTS: &[Grant] = &[
    Grant {
        skill: "nimi-analysis-skills",
        role: Role::Nimi,
        tools: &[names::GOOGLE_SEARCH],
        references: &[
            "exact-evidence-moments.md",
            "source-and-context-angles.md",
            "performance-angles.md",
            "memory-angles.md",
        ],
    },
    Grant {
        skill: "dara-editing-skills",
        role: Role::Dara,
        tools: &[],
        references: &[
            "editorial-triage.md",
            "grounding-and-claims.md",
            "structure-and-clarity.md",
            "brief-voice-audience-fit.md",
            "platform-cta-usability.md",
            "safety-and-inclusion.md",
            "bounded-feedback.md",
        ],
    },
    Grant {
        skill: "noni-writing-skills",
        role: Role::Noni,
        tools: &[names::SEARCH_VERIFIED_PUBLICATIONS, names::GOOGLE_SEARCH],
        references: &[
            "thought-leadership.md",
            "hooks-and-introductions.md",
            "mece-structure.md",
            "case-studies.md",
            "storytelling.md",
            "bad-content-diagnosis.md",
            "persuasion.md",
            "outlining.md",
            "titles-and-headlines.md",
            "convincing-content.md",
        ],
    },
    Grant {
        skill: "temi-editorial-planning-skills",
        role: Role::Temi,
        tools: crate::roles::TEMI_TOOLS,
        references: &[
            "sequencing.md",
            "cadence.md",
            "channel-and-format-fit.md",
            "windows-and-deadlines.md",
            "dependencies.md",
            "prioritization.md",
        ],
    },
    Grant {
        skill: "trend-scan",
        role: Role::Nova,
        tools: &[names::FETCH_TREND_SIGNALS, names::SEARCH_TREND_SIGNALS],
        references: &["reading-trend-signals.md"],
    },
    Grant {
        skill: "signal-watch",
        role: Role::Nova,
        tools: &[names::FETCH_TREND_SIGNALS, names::SEARCH_TREND_SIGNALS, names::GET_OPERATOR_FEED],
        references: &["operator-feed-triage.md"],
    },
    Grant {
        skill: "engagement-insights",
        role: Role::Nova,
        tools: &[names::GET_ENGAGEMENT_INSIGHTS],
        references: &["measured-performance.md"],
    },
    Grant {
        skill: "posting-schedule",
        role: Role::Nova,
        tools: &[names::GET_ENGAGEMENT_INSIGHTS, names::GET_OPERATOR_FEED, names::SUGGEST_POSTING_WINDOWS],
        references: &["utc-windows.md"],
    },
    Grant {
        skill: "job-status",
        role: Role::Nova,
        tools: &[names::GET_JOB_STATUS],
        references: &["status-vocabulary.md"],
    },
];

/// A loaded skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// Name (equals its folder).
    pub name: String,
    /// When to load it.
    pub description: String,
    /// Tools it allows.
    pub allowed_tools: Vec<String>,
    /// Version.
    pub version: String,
    /// The role that may load it.
    pub role: Role,
    /// The SKILL.md body after the front matter.
    pub body: String,
    /// Reference file name (e.g. `grounding-and-claims.md`) to text.
    pub references: BTreeMap<String, String>,
}

/// Why the skills folder could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {path}")]
    Io {
        /// The path.
        path: PathBuf,
    },
    /// SKILL.md front matter is missing or invalid.
    #[error("invalid front matter in {skill}: {why}")]
    FrontMatter {
        /// The skill folder.
        skill: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A skill grants more than the spec's table ([`GRANTS`]) gives it.
    #[error("the skill {skill} {why}, which the spec's table of skills does not give it")]
    Grants {
        /// The skill folder.
        skill: String,
        /// What it grants.
        why: String,
    },
}

/// The variable naming a skills folder to run instead of the build's own.
const SKILLS_DIR: &str = "HARMONIA_SKILLS_DIR";

impl Error {
    /// [`Error::for_operator`] for what [`SkillLibrary::configured`] loaded: the folder
    /// `HARMONIA_SKILLS_DIR` names when it is set, else the build's own.
    pub fn for_configured(&self) -> String {
        self.for_operator(std::env::var_os(SKILLS_DIR).is_some())
    }

    /// What an operator is told when the skills folder `HARMONIA_SKILLS_DIR` names (or the
    /// build's own, `configured` false) does not load: what is wrong, and what to do.
    pub fn for_operator(&self, configured: bool) -> String {
        match configured {
            true => format!(
                "The skills folder HARMONIA_SKILLS_DIR names was refused: {self}. Correct the folder, or unset HARMONIA_SKILLS_DIR to run the built-in skills."
            ),
            false => format!("The skills this build carries do not load: {self}."),
        }
    }
}

impl Skill {
    /// Whether this skill stays within what the spec's table gives it: it is a skill of the
    /// table, for its role, allowing only the table's tools and holding only its references.
    pub fn within(&self, grants: &[Grant]) -> Result<(), Error> {
        let refused = |why: String| Error::Grants { skill: self.name.clone(), why };
        let Some(grant) = grants.iter().find(|g| g.skill == self.name) else {
            return Err(refused("is not a skill of any role".to_owned()));
        };
        if grant.role != self.role {
            return Err(refused(format!("is given to {}", self.role)));
        }
        if let Some(tool) = self.allowed_tools.iter().find(|t| !grant.tools.contains(&t.as_str())) {
            return Err(refused(format!("allows the tool {tool}")));
        }
        if let Some(reference) = self.references.keys().find(|r| !grant.references.contains(&r.as_str())) {
            return Err(refused(format!("holds the reference {reference}")));
        }
        Ok(())
    }
}

/// One skill folder as read: its name, its `SKILL.md` text and its references (file, text).
type Folder = (String, String, Vec<(String, String)>);

/// Every skill under a folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillLibrary {
    skills: BTreeMap<String, Skill>,
}

fn unquote(v: &str) -> String {
    v.trim().trim_matches('"').trim_matches('\'').to_owned()
}

fn parse_list(v: &str) -> Option<Vec<String>> {
    let inner = v.trim().strip_prefix('[')?.strip_suffix(']')?;
    Some(inner.split(',').map(unquote).filter(|s| !s.is_empty()).collect())
}

fn parse_role(v: &str) -> Option<Role> {
    Role::ALL.into_iter().find(|r| r.as_str() == v)
}

/// Parse one SKILL.md. The front matter subset used by Harmonia's skills: top-level
/// `key: value` lines, an inline `[a, b]` list for `allowed-tools`, and a `metadata:` block of
/// indented `key: value` lines.
pub fn parse_skill(folder: &str, text: &str) -> Result<Skill, Error> {
    let bad = |why| Error::FrontMatter { skill: folder.to_owned(), why };
    let rest = text.strip_prefix("---\n").ok_or_else(|| bad("SKILL.md must start with ---"))?;
    let end = rest.find("\n---\n").ok_or_else(|| bad("front matter is not closed by ---"))?;
    let (front, body) = (&rest[..end], &rest[end + 5..]);
    let (mut top, mut meta) = (BTreeMap::new(), BTreeMap::new());
    let mut in_metadata = false;
    for line in front.lines().filter(|l| !l.trim().is_empty()) {
        let indented = line.starts_with(' ');
        let (key, value) = line.trim().split_once(':').ok_or_else(|| bad("every line must be key: value"))?;
        if indented && in_metadata {
            meta.insert(key.trim().to_owned(), value.trim().to_owned());
        } else if indented {
            return Err(bad("unexpected indentation"));
        } else {
            in_metadata = key == "metadata";
            top.insert(key.trim().to_owned(), value.trim().to_owned());
        }
    }
    let name = unquote(top.get("name").ok_or_else(|| bad("name is required"))?);
    if name != folder {
        return Err(bad("name must equal the folder name"));
    }
    let description = unquote(top.get("description").ok_or_else(|| bad("description is required"))?);
    if description.is_empty() {
        return Err(bad("description must not be empty"));
    }
    let allowed_tools = parse_list(top.get("allowed-tools").ok_or_else(|| bad("allowed-tools is required"))?)
        .ok_or_else(|| bad("allowed-tools must be an inline [list]"))?;
    let version = unquote(meta.get("version").ok_or_else(|| bad("metadata.version is required"))?);
    let role = parse_role(&unquote(meta.get("role").ok_or_else(|| bad("metadata.role is required"))?))
        .ok_or_else(|| bad("metadata.role must be a role name"))?;
    Ok(Skill { name, description, allowed_tools, version, role, body: body.to_owned(), references: BTreeMap::new() })
}

impl SkillLibrary {
    /// Load every skill folder under `dir`.
    pub fn load(dir: &Path) -> Result<Self, Error> {
        let io = |path: &Path| Error::Io { path: path.to_path_buf() };
        let mut folders = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(dir).map_err(|_| io(dir))?.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let skill_md = path.join("SKILL.md");
            if !path.is_dir() || !skill_md.is_file() {
                continue;
            }
            let folder = entry.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&skill_md).map_err(|_| io(&skill_md))?;
            let mut references = Vec::new();
            let refs = path.join("references");
            if refs.is_dir() {
                for r in std::fs::read_dir(&refs).map_err(|_| io(&refs))?.flatten() {
                    let file = r.file_name().to_string_lossy().into_owned();
                    if file.ends_with(".md") {
                        references.push((file, std::fs::read_to_string(r.path()).map_err(|_| io(&r.path()))?));
                    }
                }
            }
            folders.push((folder, text, references));
        }
        Self::from_folders(folders)
    }

    /// The skills this build carries: the repository's `skills/` folder as it was when the
    /// crate was built (checked as [`load`](Self::load) checks a folder).
    pub fn embedded() -> Result<Self, Error> {
        Self::from_folders(embedded::EMBEDDED.iter().map(|(folder, text, references)| {
            let references = references.iter().map(|(file, body)| ((*file).to_owned(), (*body).to_owned()));
            ((*folder).to_owned(), (*text).to_owned(), references.collect())
        }))
    }

    /// The skills to run with: the folder `HARMONIA_SKILLS_DIR` names, when it is set (to run
    /// other skills than the build's), else the embedded ones.
    pub fn configured() -> Result<Self, Error> {
        match std::env::var_os(SKILLS_DIR) {
            Some(dir) => Self::load(Path::new(&dir)),
            None => Self::embedded(),
        }
    }

    /// Parse and check each (folder, SKILL.md text, references) as a skill.
    fn from_folders(folders: impl IntoIterator<Item = Folder>) -> Result<Self, Error> {
        let mut skills = BTreeMap::new();
        for (folder, text, references) in folders {
            let mut skill = parse_skill(&folder, &text)?;
            skill.references.extend(references);
            skill.within(GRANTS)?;
            skills.insert(folder, skill);
        }
        Ok(Self { skills })
    }

    /// A skill by name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// All skills.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }
}

/// One recorded load or data read, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadEvent {
    /// `load_skill(name)`.
    Skill(String),
    /// `load_reference(skill, reference)`.
    Reference(String, String),
    /// Any data tool call.
    DataTool(String),
}

/// A load sequence broke its role's rule (missing, duplicate, out-of-order or unapproved).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid skill load sequence")]
pub struct SequenceInvalid;

/// What a role must load, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkillRule {
    /// The role loads no skills.
    None,
    /// Exactly one load of `skill`, then at least `min_references` of its references, all
    /// before the output; with `references_before_data`, every reference before any data read.
    One {
        /// The skill.
        skill: &'static str,
        /// Minimum distinct references.
        min_references: usize,
        /// References must precede every data tool call.
        references_before_data: bool,
    },
    /// Exactly one of these skills, loaded before any data tool.
    OneOf(&'static [&'static str]),
}

impl SkillRule {
    /// Whether loading `skill` is approved for this rule.
    pub fn approves(&self, skill: &str) -> bool {
        match self {
            SkillRule::None => false,
            SkillRule::One { skill: s, .. } => *s == skill,
            SkillRule::OneOf(list) => list.contains(&skill),
        }
    }

    /// Check a finished trace.
    pub fn check(&self, trace: &[LoadEvent], library: &SkillLibrary) -> Result<(), SequenceInvalid> {
        let skills: Vec<&str> =
            trace.iter().filter_map(|e| if let LoadEvent::Skill(s) = e { Some(s.as_str()) } else { None }).collect();
        match self {
            SkillRule::None => {
                if trace.iter().any(|e| !matches!(e, LoadEvent::DataTool(_))) {
                    return Err(SequenceInvalid);
                }
                Ok(())
            }
            SkillRule::OneOf(_) => {
                let [only] = skills.as_slice() else {
                    return Err(SequenceInvalid);
                };
                if !self.approves(only) {
                    return Err(SequenceInvalid);
                }
                // The skill comes first: before any data tool and any reference.
                if !matches!(trace.first(), Some(LoadEvent::Skill(_))) {
                    return Err(SequenceInvalid);
                }
                check_references(trace, only, library, 0)
            }
            SkillRule::One { skill, min_references, references_before_data } => {
                if skills.as_slice() != [*skill] || !matches!(trace.first(), Some(LoadEvent::Skill(_))) {
                    return Err(SequenceInvalid);
                }
                check_references(trace, skill, library, *min_references)?;
                if *references_before_data {
                    let first_data = trace.iter().position(|e| matches!(e, LoadEvent::DataTool(_)));
                    let last_ref = trace.iter().rposition(|e| matches!(e, LoadEvent::Reference(..)));
                    if let (Some(data), Some(reference)) = (first_data, last_ref)
                        && reference > data
                    {
                        return Err(SequenceInvalid);
                    }
                }
                Ok(())
            }
        }
    }
}

/// Every reference belongs to `skill`, exists, and is loaded once; at least `min` of them.
fn check_references(
    trace: &[LoadEvent],
    skill: &str,
    library: &SkillLibrary,
    min: usize,
) -> Result<(), SequenceInvalid> {
    let known = library.get(skill).ok_or(SequenceInvalid)?;
    let mut seen = std::collections::BTreeSet::new();
    for event in trace {
        if let LoadEvent::Reference(s, r) = event
            && (s != skill || !known.references.contains_key(r) || !seen.insert(r.as_str()))
        {
            return Err(SequenceInvalid);
        }
    }
    if seen.len() >= min { Ok(()) } else { Err(SequenceInvalid) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repository() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../skills")
    }

    fn library() -> SkillLibrary {
        SkillLibrary::load(&repository()).expect("the repository's skills load")
    }

    /// The build carries exactly the repository's skills: every skill, body and reference.
    #[test]
    fn the_embedded_skills_are_the_repositorys() {
        assert_eq!(SkillLibrary::embedded().expect("the embedded skills load"), library());
    }

    #[test]
    fn repository_skills_are_complete_and_well_formed() {
        let lib = library();
        let expect = [
            ("nimi-analysis-skills", Role::Nimi, 3),
            ("dara-editing-skills", Role::Dara, 7),
            ("noni-writing-skills", Role::Noni, 10),
            ("temi-editorial-planning-skills", Role::Temi, 6),
            ("trend-scan", Role::Nova, 1),
            ("signal-watch", Role::Nova, 1),
            ("engagement-insights", Role::Nova, 1),
            ("posting-schedule", Role::Nova, 1),
            ("job-status", Role::Nova, 1),
        ];
        for (name, role, min_refs) in expect {
            let skill = lib.get(name).unwrap_or_else(|| panic!("missing skill {name}"));
            assert_eq!(skill.role, role, "{name}");
            assert!(skill.references.len() >= min_refs, "{name} has {} references", skill.references.len());
            assert!(skill.body.split_whitespace().count() > 300, "{name} is substantive");
            for (file, text) in &skill.references {
                assert!(text.split_whitespace().count() > 300, "{name}/{file} is substantive");
            }
        }
        // The repository's folders hold every reference the spec's table names, and no other.
        for grant in GRANTS {
            let skill = lib.get(grant.skill).unwrap_or_else(|| panic!("missing skill {}", grant.skill));
            let held: Vec<&str> = skill.references.keys().map(String::as_str).collect();
            let mut named = grant.references.to_vec();
            named.sort_unstable();
            assert_eq!(held, named, "{}", grant.skill);
        }
        assert_eq!(
            lib.get("posting-schedule").map(|s| s.allowed_tools.clone()),
            Some(vec![
                "get_engagement_insights".to_owned(),
                "get_operator_feed".to_owned(),
                "suggest_posting_windows".to_owned()
            ])
        );
    }

    #[test]
    fn the_table_gives_each_skill_only_what_its_role_may_have() {
        for grant in GRANTS {
            let spec = crate::roles::spec(grant.role);
            assert!(spec.skills.approves(grant.skill), "{} is not {}'s", grant.skill, grant.role);
            for tool in grant.tools {
                assert!(
                    spec.tools.contains(tool),
                    "{} grants {tool}, outside {}'s allow-list",
                    grant.skill,
                    grant.role
                );
            }
        }
        // And every skill a role's rule names is in the table.
        for role in Role::ALL {
            for grant in GRANTS.iter().filter(|g| crate::roles::spec(role).skills.approves(g.skill)) {
                assert_eq!(grant.role, role);
            }
        }
    }

    /// The embedded folders, with `change` made to the SKILL.md text or references of `skill`.
    fn folders_with(skill: &str, change: impl Fn(&mut String, &mut Vec<(String, String)>)) -> Vec<Folder> {
        embedded::EMBEDDED
            .iter()
            .map(|(folder, text, references)| {
                let mut text = (*text).to_owned();
                let mut references: Vec<(String, String)> =
                    references.iter().map(|(f, t)| ((*f).to_owned(), (*t).to_owned())).collect();
                if *folder == skill {
                    change(&mut text, &mut references);
                }
                ((*folder).to_owned(), text, references)
            })
            .collect()
    }

    #[test]
    fn a_skill_folder_that_grants_more_than_the_table_is_refused() {
        let refused = |folders| match SkillLibrary::from_folders(folders) {
            Err(Error::Grants { skill, why }) => format!("{skill}: {why}"),
            other => panic!("not refused: {other:?}"),
        };
        let tool = folders_with("job-status", |text, _| {
            *text =
                text.replace("allowed-tools: [get_job_status]", "allowed-tools: [get_job_status, get_operator_feed]");
        });
        let Err(e) = SkillLibrary::from_folders(tool.clone()) else { panic!("refused") };
        assert_eq!(
            e.for_operator(true),
            "The skills folder HARMONIA_SKILLS_DIR names was refused: the skill job-status allows the tool \
             get_operator_feed, which the spec's table of skills does not give it. Correct the folder, or unset \
             HARMONIA_SKILLS_DIR to run the built-in skills."
        );
        assert_eq!(refused(tool), "job-status: allows the tool get_operator_feed");
        let write = folders_with("dara-editing-skills", |text, _| {
            *text = text.replace("allowed-tools: []", "allowed-tools: [publish_post]");
        });
        assert_eq!(refused(write), "dara-editing-skills: allows the tool publish_post");
        let reference = folders_with("noni-writing-skills", |_, references| {
            references.push(("approving-posts.md".into(), "Approve.".into()));
        });
        assert_eq!(refused(reference), "noni-writing-skills: holds the reference approving-posts.md");
        let role = folders_with("trend-scan", |text, _| *text = text.replace("role: nova", "role: noni"));
        assert_eq!(refused(role), "trend-scan: is given to noni");
        let mut extra = folders_with("job-status", |_, _| {});
        extra.push((
            "everything".into(),
            "---\nname: everything\ndescription: d\nallowed-tools: []\nmetadata:\n  version: \"1\"\n  role: nova\n---\nbody"
                .into(),
            Vec::new(),
        ));
        assert_eq!(refused(extra), "everything: is not a skill of any role");
        // The folder as built stays within the table, and a skill may hold fewer references.
        assert!(SkillLibrary::from_folders(folders_with("dara-editing-skills", |_, r| r.truncate(1))).is_ok());
    }

    #[test]
    fn front_matter_errors_are_typed() {
        assert!(parse_skill("x", "no front matter").is_err());
        let wrong_name =
            "---\nname: y\ndescription: d\nallowed-tools: []\nmetadata:\n  version: \"1\"\n  role: nimi\n---\nbody";
        assert!(parse_skill("x", wrong_name).is_err());
        let ok = wrong_name.replace("name: y", "name: x");
        assert_eq!(parse_skill("x", &ok).map(|s| s.role).ok(), Some(Role::Nimi));
        let bad_role = ok.replace("role: nimi", "role: boss");
        assert!(parse_skill("x", &bad_role).is_err());
    }

    fn s(name: &str) -> LoadEvent {
        LoadEvent::Skill(name.into())
    }
    fn r(skill: &str, file: &str) -> LoadEvent {
        LoadEvent::Reference(skill.into(), file.into())
    }
    fn d(tool: &str) -> LoadEvent {
        LoadEvent::DataTool(tool.into())
    }

    #[test]
    fn sequence_rules() {
        let lib = library();
        let temi =
            SkillRule::One { skill: "temi-editorial-planning-skills", min_references: 1, references_before_data: true };
        let t = "temi-editorial-planning-skills";
        assert!(temi.check(&[s(t), r(t, "cadence.md"), d("get_capacity")], &lib).is_ok());
        assert!(temi.check(&[s(t), d("get_capacity"), r(t, "cadence.md")], &lib).is_err(), "reference after a read");
        assert!(temi.check(&[s(t)], &lib).is_err(), "missing reference");
        assert!(temi.check(&[r(t, "cadence.md")], &lib).is_err(), "missing skill");
        assert!(temi.check(&[s(t), s(t), r(t, "cadence.md")], &lib).is_err(), "duplicate skill");
        assert!(temi.check(&[s(t), r(t, "cadence.md"), r(t, "cadence.md")], &lib).is_err(), "duplicate reference");
        assert!(temi.check(&[s(t), r(t, "nope.md")], &lib).is_err(), "unknown reference");
        assert!(
            temi.check(&[s(t), r("dara-editing-skills", "editorial-triage.md")], &lib).is_err(),
            "another skill's reference"
        );
        assert!(temi.check(&[s("dara-editing-skills"), r(t, "cadence.md")], &lib).is_err(), "unapproved skill");

        let nova = SkillRule::OneOf(&["job-status", "trend-scan"]);
        assert!(nova.check(&[s("job-status"), d("get_job_status")], &lib).is_ok());
        assert!(nova.check(&[d("get_job_status"), s("job-status")], &lib).is_err(), "data before skill");
        assert!(nova.check(&[s("job-status"), s("trend-scan")], &lib).is_err(), "two skills");
        assert!(SkillRule::None.check(&[s("job-status")], &lib).is_err());
    }
}
