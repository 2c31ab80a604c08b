//! The detector's words in the languages it reads (English, German, Spanish, French,
//! Portuguese, Italian), and what each word can be to it.
//!
//! Every list holds normalised words (lower case, NFKC): accented forms as they are written
//! (`règles`, `instrucciones`, `veröffentliche`) and, where dropping the accent makes no other
//! word of the list's language, the unaccented spelling people type too (`regles`,
//! `veroffentliche`, `veroeffentliche`). Accents are not stripped for matching: French
//! participles (`approuvé`, `publié`) would then read as the imperatives they differ from
//! only by the accent (`approuve`, `publie`).
//!
//! The lists are looked up through one map from a word to the set of lists that hold it
//! ([`kinds`]), so a word costs one hash lookup however many lists and languages there are.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// The lists a word is in, one bit per list.
pub(super) type Kinds = u32;

/// A role label (`system`, `Assistent`, `sistema`).
pub(super) const ROLE: Kinds = 1;
/// A word that may stand beside a role in its label (`note`, `to`, `the`, `nachricht`, `para`).
pub(super) const MARKER: Kinds = 1 << 1;
/// The system, assistant or model as an addressee.
pub(super) const ADDRESSEE: Kinds = 1 << 2;
/// A word that calls on someone before the addressee (`hey`, `hallo`, `oye`).
pub(super) const VOCATIVE: Kinds = 1 << 3;
/// The reader told what to do (`you`, `du`, `tu`, `must`).
pub(super) const YOU: Kinds = 1 << 4;
/// A verb that sets rules aside, followed by what it sets aside.
pub(super) const OVERRIDE: Kinds = 1 << 5;
/// A German infinitive that sets rules aside after naming them (`Anweisungen ignorieren`).
pub(super) const OVERRIDE_LAST: Kinds = 1 << 6;
/// What an override sets aside (`instructions`, `Anweisungen`, `reglas`).
pub(super) const ASIDE: Kinds = 1 << 7;
/// A clause-initial action verb of a publishing order.
pub(super) const ACTION: Kinds = 1 << 8;
/// An action verb carrying its object (`publícalo`, `pubblicalo`).
pub(super) const WITH_OBJECT: Kinds = 1 << 9;
/// What a publishing order acts on (`draft`, `Beitrag`, `publicación`).
pub(super) const TARGET: Kinds = 1 << 10;
/// A word that may stand before an order's verb (`and`, `bitte`, `y`, `puis`).
pub(super) const OPENER: Kinds = 1 << 11;
/// A claim of approval (`approved`, `genehmigt`, `aprobado`, `approuvé`).
pub(super) const APPROVAL: Kinds = 1 << 12;
/// The pipeline's gate or work, which an approval claim names.
pub(super) const GATED: Kinds = 1 << 13;
/// A verb of a call order (`call`, `rufe`, `llama`).
pub(super) const CALL: Kinds = 1 << 14;
/// A tool or function, by that name (`tool`, `Werkzeug`, `herramienta`).
pub(super) const TOOL_NOUN: Kinds = 1 << 15;
/// A demand for immediacy.
pub(super) const URGENT: Kinds = 1 << 16;
/// The first word of an urgency phrase ([`URGENT_PHRASES`]).
pub(super) const URGENT_START: Kinds = 1 << 17;
/// The first word of a persona phrase ([`PERSONAS`]).
pub(super) const PERSONA_START: Kinds = 1 << 18;
/// The first word of a phrase folded into `ignore` ([`FOLDED`]).
pub(super) const FOLD_START: Kinds = 1 << 19;
/// A word without which no signal but urgency and disguise is found (see
/// [`crate::Reading::may_signal`]).
pub(super) const TRIGGER: Kinds = 1 << 20;
/// A verb of obligation that may carry an order (`must`, `musst`, `debes`, `dois`, `devi`).
pub(super) const MODAL: Kinds = 1 << 21;
/// An action verb in the infinitive, the order a modal carries (`veröffentlichen`, `publicar`).
pub(super) const INFINITIVE: Kinds = 1 << 22;

/// The lexicon's kinds of `word` (0 for a word it does not know).
pub(super) fn kinds(word: &str) -> Kinds {
    LEXICON.with(|l| l.kinds(word))
}

/// Run `f` with the lexicon, for a caller that looks many words up.
pub(super) fn with_lexicon<T>(f: impl FnOnce(&Lexicon) -> T) -> T {
    LEXICON.with(f)
}

type FnvBuild = BuildHasherDefault<Fnv>;

/// What a text holding a word may hold beyond it, one bit each: [`SIGNAL_NEED`],
/// [`CLAIM_NEED`].
pub(super) type Needs = u8;

/// A [`TRIGGER`]: a word without which no signal but urgency and disguise is found.
pub(super) const SIGNAL_NEED: Needs = 1;

/// A word without which no authority claim is found ([`crate::authority`]): an actor that is
/// the speaker (`assistant` included, for `the assistant`) or a finished effect.
pub(super) const CLAIM_NEED: Needs = 2;

/// Words and their kinds, and apart from them the words a signal or a claim needs: the map a
/// text with neither is read against is kept small, so its lookups stay in the nearest cache.
pub(super) struct Lexicon {
    kinds: HashMap<&'static str, Kinds, FnvBuild>,
    needs: HashMap<&'static str, Needs, FnvBuild>,
}

impl Lexicon {
    /// The kinds of `word` (0 for a word it does not know).
    pub(super) fn kinds(&self, word: &str) -> Kinds {
        self.kinds.get(word).copied().unwrap_or(0)
    }

    /// What a text holding `word` may hold beyond it (0 for most words).
    pub(super) fn needs(&self, word: &str) -> Needs {
        self.needs.get(word).copied().unwrap_or(0)
    }
}

/// FNV-1a, to look a text's words up among the detector's own: the set is fixed when it is
/// built, so what a text holds cannot crowd its buckets, and a keyed hash would only make every
/// lookup slower.
#[derive(Default)]
pub(super) struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for b in bytes {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

thread_local! {
    static LEXICON: Lexicon = lexicon();
}

/// The word of `phrase` whose presence every text holding the phrase shares and that is
/// rarest in ordinary speech: its longest (the first of equals) that is not one of the
/// [`COMMONEST`] words, unless all of them are.
fn phrase_trigger(phrase: &[&'static str]) -> &'static str {
    // `max_by_key` keeps the last of equals: read from the end, that is the first.
    phrase.iter().rev().copied().max_by_key(|w| (!COMMONEST.contains(w), w.chars().count())).unwrap_or("")
}

/// Words of the phrases that ordinary speech is full of (pronouns, prepositions, articles,
/// negations, `are`, `from`, `comme`): a text holding one is no likelier to hold the phrase,
/// so it is not read clause by clause for that word alone.
#[rustfmt::skip]
const COMMONEST: &[&str] = &[
    // English.
    "you", "your", "are", "from", "on", "as", "to", "no", "not", "do", "out",
    // German.
    "du", "sie", "sind", "bist", "von", "an", "als", "so", "dich", "die", "nicht", "ab", "wie",
    // Spanish.
    "de", "en", "por", "tu", "como", "desde", "ya",
    // French.
    "es", "vous", "le", "ne", "pas", "plus", "toi", "comme", "suis",
    // Portuguese.
    "você", "voce", "é", "e", "em", "seu", "teu", "não", "nao",
    // Italian.
    "ora", "in", "poi", "di", "non", "come", "sei", "tuo",
];

fn lexicon() -> Lexicon {
    let mut map: HashMap<&'static str, Kinds, FnvBuild> = HashMap::default();
    let mut add = |words: &[&'static str], kinds: Kinds| {
        for w in words {
            *map.entry(*w).or_insert(0) |= kinds;
        }
    };
    // Every signal but urgency and disguise needs one of the trigger words: a role for a role
    // marker, an override verb (or a folded phrase) for an override, an action for a
    // publishing order, an approval word for a claim, an addressee, a call verb, a persona
    // phrase. A tool name needs an underscore or a bracket, which `Reading::may_signal` looks
    // for.
    add(ROLES, ROLE | TRIGGER);
    add(MARKER_WORDS, MARKER);
    add(ADDRESSED, ADDRESSEE | TRIGGER);
    add(VOCATIVES, VOCATIVE);
    add(YOU_WORDS, YOU);
    add(OVERRIDE_VERBS, OVERRIDE | TRIGGER);
    add(OVERRIDE_LAST_VERBS, OVERRIDE_LAST | TRIGGER);
    add(SET_ASIDE, ASIDE);
    add(ACTIONS, ACTION | TRIGGER);
    add(ACTIONS_WITH_OBJECT, ACTION | WITH_OBJECT | TRIGGER);
    add(MODALS, MODAL);
    // English infinitives are the imperatives.
    add(ACTIONS, INFINITIVE);
    add(INFINITIVES, INFINITIVE | TRIGGER);
    add(TARGETS, TARGET);
    add(CLAUSE_OPENERS, OPENER);
    add(APPROVAL_WORDS, APPROVAL | TRIGGER);
    add(GATED_WORDS, GATED);
    add(CALL_VERBS, CALL | TRIGGER);
    add(TOOL_NOUNS, TOOL_NOUN);
    add(URGENT_WORDS, URGENT);
    for phrase in URGENT_PHRASES {
        add(&phrase[..1], URGENT_START);
    }
    for phrase in PERSONAS {
        add(&phrase[..1], PERSONA_START);
        add(&[phrase_trigger(phrase)], TRIGGER);
    }
    for phrase in FOLDED {
        add(&phrase[..1], FOLD_START);
        add(&[phrase_trigger(phrase)], TRIGGER);
    }
    let mut needs: HashMap<&'static str, Needs, FnvBuild> =
        map.iter().filter(|(_, k)| **k & TRIGGER != 0).map(|(w, _)| (*w, SIGNAL_NEED)).collect();
    for word in ACTORS.iter().chain(DONE).chain(&["assistant"]) {
        *needs.entry(word).or_insert(0) |= CLAIM_NEED;
    }
    Lexicon { kinds: map, needs }
}

/// Role labels.
pub(super) const ROLES: &[&str] = &[
    // English.
    "system",
    "sys",
    "assistant",
    "model",
    "ai",
    "llm",
    "chatbot",
    "bot",
    "agent",
    "gpt",
    "chatgpt",
    "gemini",
    "developer",
    "admin",
    "administrator",
    "root",
    "operator",
    "inst",
    "im_start",
    // German.
    "assistent",
    "assistentin",
    "modell",
    "sprachmodell",
    "ki",
    "entwickler",
    "betreiber",
    "bediener",
    "systemnachricht",
    "systemhinweis",
    "systemanweisung",
    // Spanish, Portuguese, Italian.
    "sistema",
    "asistente",
    "assistente",
    "modelo",
    "modello",
    "ia",
    "agente",
    "desarrollador",
    "desenvolvedor",
    "sviluppatore",
    "administrador",
    "amministratore",
    "operador",
    "operatore",
    // French.
    "système",
    "systeme",
    "assistante",
    "modèle",
    "modele",
    "développeur",
    "developpeur",
    "administrateur",
    "opérateur",
    "operateur",
];

/// Words that may stand beside a role in its label.
pub(super) const MARKER_WORDS: &[&str] = &[
    // English.
    "override",
    "message",
    "prompt",
    "note",
    "notice",
    "instruction",
    "instructions",
    "update",
    "alert",
    "mode",
    "command",
    "internal",
    "priority",
    "urgent",
    "important",
    "new",
    "to",
    "the",
    "a",
    "for",
    "from",
    "dear",
    "hey",
    "attention",
    "all",
    // Chat-message fields (`"role": "system", "content": …`).
    "role",
    "content",
    // German.
    "nachricht",
    "hinweis",
    "notiz",
    "anweisung",
    "anweisungen",
    "aktualisierung",
    "modus",
    "befehl",
    "intern",
    "interne",
    "wichtig",
    "wichtige",
    "dringend",
    "dringende",
    "neue",
    "neuer",
    "neues",
    "an",
    "die",
    "den",
    "das",
    "der",
    "dem",
    "für",
    "fur",
    "fuer",
    "von",
    "liebe",
    "lieber",
    "liebes",
    "hallo",
    "achtung",
    "alle",
    "priorität",
    // Spanish.
    "mensaje",
    "nota",
    "aviso",
    "instrucción",
    "instruccion",
    "instrucciones",
    "actualización",
    "actualizacion",
    "modo",
    "comando",
    "orden",
    "interno",
    "interna",
    "urgente",
    "importante",
    "nuevo",
    "nueva",
    "nuevas",
    "al",
    "el",
    "la",
    "los",
    "las",
    "para",
    "del",
    "de",
    "querido",
    "querida",
    "hola",
    "atención",
    "atencion",
    "todos",
    "prioridad",
    // French.
    "avis",
    "consigne",
    "consignes",
    "mise",
    "à",
    "jour",
    "commande",
    "interne",
    "nouveau",
    "nouvelle",
    "nouvelles",
    "au",
    "aux",
    "le",
    "l",
    "les",
    "pour",
    "du",
    "d",
    "cher",
    "chère",
    "chere",
    "bonjour",
    "salut",
    "tous",
    "priorité",
    "priorite",
    // Portuguese.
    "mensagem",
    "instrução",
    "instrucao",
    "instruções",
    "instrucoes",
    "atualização",
    "atualizacao",
    "novo",
    "nova",
    "novas",
    "ao",
    "o",
    "os",
    "as",
    "do",
    "da",
    "caro",
    "cara",
    "prezado",
    "prezada",
    "olá",
    "ola",
    "atenção",
    "atencao",
    "prioridade",
    // Italian.
    "messaggio",
    "avviso",
    "istruzione",
    "istruzioni",
    "aggiornamento",
    "modalità",
    "modalita",
    "nuovo",
    "nuova",
    "nuove",
    "all",
    "allo",
    "alla",
    "il",
    "lo",
    "per",
    "dello",
    "della",
    "dell",
    "di",
    "ciao",
    "attenzione",
    "tutti",
    "priorità",
    "priorita",
];

/// The system, assistant or model, as someone called on or told what to do.
pub(super) const ADDRESSED: &[&str] = &[
    // English.
    "assistant",
    "model",
    "ai",
    "llm",
    "chatbot",
    "bot",
    "agent",
    "system",
    "gpt",
    "chatgpt",
    "gemini",
    "pipeline",
    "harmonia",
    "models",
    "agents",
    "assistants",
    // German.
    "ki",
    "assistent",
    "assistentin",
    "modell",
    "sprachmodell",
    // Spanish, Portuguese, Italian.
    "ia",
    "asistente",
    "assistente",
    "modelo",
    "modello",
    "sistema",
    "agente",
    // French.
    "assistante",
    "modèle",
    "modele",
    "système",
    "systeme",
];

/// Words that call on someone before the addressee (`hey assistant`, `hola IA`).
pub(super) const VOCATIVES: &[&str] = &[
    // English.
    "hey",
    "hi",
    "dear",
    "ok",
    "okay",
    "attention",
    "yo",
    "listen",
    // German.
    "hallo",
    "liebe",
    "lieber",
    "liebes",
    "achtung",
    "hör",
    "hoer",
    // Spanish.
    "hola",
    "oye",
    "oiga",
    "querido",
    "querida",
    "estimado",
    "estimada",
    "atención",
    "atencion",
    "escucha",
    // French.
    "salut",
    "bonjour",
    "cher",
    "chère",
    "chere",
    "écoute",
    "ecoute",
    "écoutez",
    "ecoutez",
    "eh",
    "hé",
    // Portuguese.
    "olá",
    "ola",
    "oi",
    "ei",
    "caro",
    "cara",
    "prezado",
    "prezada",
    "atenção",
    "atencao",
    "escute",
    // Italian.
    "ciao",
    "ehi",
    "gentile",
    "attenzione",
    "ascolta",
    "senti",
];

/// The reader told what to do, just after the addressee (`assistant, you must`, `KI, du`).
pub(super) const YOU_WORDS: &[&str] = &[
    // English.
    "you", "your", "yourself", "you're", "must", // German.
    "du", "dein", "deine", "deinen", "deiner", "dich", "dir", "musst", "sollst", // Spanish.
    "tú", "tu", "tus", "te", "ti", "debes", "usted", // French.
    "ton", "ta", "tes", "toi", "dois", "vous", "votre", "vos", "devez", // Portuguese.
    "você", "voce", "teu", "tua", "seu", "sua", "deve", "deves", // Italian.
    "tuo", "tuoi", "tue", "devi",
];

/// Verbs that set rules aside when what they set aside follows within five words.
pub(super) const OVERRIDE_VERBS: &[&str] = &[
    // English.
    "ignore",
    "ignoring",
    "disregard",
    "disregarding",
    "forget",
    "override",
    "overrule",
    "bypass",
    "circumvent",
    "disable",
    "skip",
    "abandon",
    "discard",
    "drop",
    "nullify",
    "cancel",
    // German.
    "ignoriere",
    "ignorier",
    "ignoriert",
    "ignorieren",
    "ignorierst",
    "vergiss",
    "vergesst",
    "vergessen",
    "vergisst",
    "missachte",
    "missachtet",
    "missachten",
    "missachtest",
    "umgehe",
    "umgeh",
    "umgeht",
    "umgehen",
    "überspringe",
    "ueberspringe",
    "überspring",
    "übergehe",
    "uebergehe",
    "deaktiviere",
    "deaktivieren",
    "verwirf",
    "verwerfe",
    "überschreibe",
    "ueberschreibe",
    // Spanish.
    "ignora",
    "ignorad",
    "ignoren",
    "ignorar",
    "ignorando",
    "ignores",
    "olvida",
    "olvide",
    "olvidad",
    "olviden",
    "olvidar",
    "olvidando",
    "descarta",
    "descarte",
    "descartar",
    "omite",
    "omita",
    "omitir",
    "sáltate",
    "saltate",
    "desactiva",
    "desactive",
    "desactivar",
    "anula",
    "anule",
    "anular",
    "elude",
    "eluda",
    "desobedece",
    "desobedezca",
    "desobedecer",
    "incumple",
    // French.
    "ignorez",
    "ignorer",
    "oublie",
    "oubliez",
    "oublier",
    "oublies",
    "contourne",
    "contournez",
    "contourner",
    "désactive",
    "désactivez",
    "desactivez",
    "désactiver",
    "annule",
    "annulez",
    "outrepasse",
    "outrepassez",
    "enfreins",
    "enfreignez",
    "transgresse",
    "abandonne",
    "abandonnez",
    "écarte",
    "écartez",
    "néglige",
    "négligez",
    // Portuguese.
    "ignorem",
    "esqueça",
    "esqueca",
    "esqueçam",
    "esquece",
    "esquecer",
    "esquecendo",
    "desconsidere",
    "desconsidera",
    "desconsiderar",
    "desconsiderem",
    "contorne",
    "contorna",
    "contornar",
    "burle",
    "burlar",
    "desative",
    "desativa",
    "desativar",
    "pule",
    "pular",
    "desobedeça",
    "desobedeca",
    "despreze",
    "despreza",
    // Italian.
    "ignorate",
    "ignori",
    "ignorare",
    "dimentica",
    "dimenticate",
    "dimentichi",
    "dimenticare",
    "trascura",
    "trascurate",
    "trascurare",
    "aggira",
    "aggirate",
    "aggirare",
    "disattiva",
    "disattivate",
    "disattivare",
    "scarta",
    "scartate",
    "annulla",
    "annullate",
    "tralascia",
    "tralasciate",
    "bypassa",
    "disobbedisci",
];

/// German infinitives that set rules aside after naming them, within four words
/// (`alle bisherigen Anweisungen ignorieren`, `die Regeln vergessen`).
pub(super) const OVERRIDE_LAST_VERBS: &[&str] = &[
    "ignorieren",
    "vergessen",
    "missachten",
    "umgehen",
    "überspringen",
    "ueberspringen",
    "übergehen",
    "deaktivieren",
    "verwerfen",
];

/// What an override sets aside.
pub(super) const SET_ASIDE: &[&str] = &[
    // English.
    "instruction",
    "instructions",
    "rule",
    "rules",
    "prompt",
    "prompts",
    "guideline",
    "guidelines",
    "guidance",
    "direction",
    "directions",
    "directive",
    "directives",
    "policy",
    "policies",
    "constraint",
    "constraints",
    "safeguard",
    "safeguards",
    "guardrail",
    "guardrails",
    "restriction",
    "restrictions",
    "programming",
    "review",
    "gate",
    "checks",
    "filters",
    "moderation",
    "approval",
    "orders",
    "commands",
    // German.
    "anweisung",
    "anweisungen",
    "regel",
    "regeln",
    "vorgabe",
    "vorgaben",
    "richtlinie",
    "richtlinien",
    "leitlinien",
    "befehle",
    "anordnungen",
    "instruktionen",
    "einschränkungen",
    "einschraenkungen",
    "beschränkungen",
    "beschraenkungen",
    "sicherheitsregeln",
    "sicherheitsrichtlinien",
    "vorschriften",
    "prüfung",
    "pruefung",
    "überprüfung",
    "freigabe",
    "filter",
    "systemprompt",
    "programmierung",
    "kontrollen",
    // Spanish.
    "instrucción",
    "instruccion",
    "instrucciones",
    "regla",
    "reglas",
    "norma",
    "normas",
    "indicaciones",
    "directrices",
    "directriz",
    "directivas",
    "pautas",
    "política",
    "politica",
    "políticas",
    "politicas",
    "restricciones",
    "limitaciones",
    "salvaguardas",
    "protecciones",
    "órdenes",
    "ordenes",
    "programación",
    "programacion",
    "revisión",
    "revision",
    "aprobación",
    "aprobacion",
    "filtros",
    "moderación",
    "moderacion",
    "controles",
    "consignas",
    // French.
    "consigne",
    "consignes",
    "règle",
    "règles",
    "regle",
    "regles",
    "politique",
    "politiques",
    "contraintes",
    "ordres",
    "programmation",
    "relecture",
    "révision",
    "validation",
    "modération",
    "filtres",
    "contrôles",
    "protections",
    "limites",
    // Portuguese.
    "instrução",
    "instrucao",
    "instruções",
    "instrucoes",
    "regra",
    "regras",
    "diretrizes",
    "diretriz",
    "orientações",
    "orientacoes",
    "restrições",
    "restricoes",
    "limitações",
    "limitacoes",
    "proteções",
    "protecoes",
    "ordens",
    "comandos",
    "programação",
    "programacao",
    "revisão",
    "revisao",
    "aprovação",
    "aprovacao",
    "moderação",
    "moderacao",
    // Italian.
    "istruzione",
    "istruzioni",
    "regola",
    "regole",
    "norme",
    "direttive",
    "indicazioni",
    "politiche",
    "restrizioni",
    "vincoli",
    "limitazioni",
    "salvaguardie",
    "protezioni",
    "ordini",
    "comandi",
    "programmazione",
    "revisione",
    "approvazione",
    "filtri",
    "moderazione",
    "controlli",
];

/// Phrases read as the verb `ignore` (longest of a kind first).
pub(super) const FOLDED: &[&[&str]] = &[
    // English.
    &["pay", "no", "attention", "to"],
    &["pay", "no", "attention"],
    &["do", "not", "follow"],
    &["don't", "follow"],
    &["dont", "follow"],
    &["no", "longer", "follow"],
    &["set", "aside"],
    &["stop", "following"],
    &["throw", "out"],
    &["get", "around"],
    // German.
    &["halte", "dich", "nicht", "an"],
    &["halt", "dich", "nicht", "an"],
    &["setze", "dich", "über"],
    &["setz", "dich", "über"],
    &["setze", "dich", "ueber"],
    // Spanish.
    &["haz", "caso", "omiso"],
    &["no", "hagas", "caso"],
    &["no", "sigas"],
    &["deja", "de", "seguir"],
    &["pasa", "por", "alto"],
    // French.
    &["ne", "tiens", "pas", "compte"],
    &["ne", "tenez", "pas", "compte"],
    &["ne", "suis", "plus"],
    &["ne", "suivez", "plus"],
    &["ne", "suis", "pas"],
    &["ne", "suivez", "pas"],
    &["fais", "abstraction"],
    &["faites", "abstraction"],
    &["passe", "outre"],
    &["passez", "outre"],
    &["arrête", "de", "suivre"],
    &["arrete", "de", "suivre"],
    &["arrêtez", "de", "suivre"],
    &["cesse", "de", "suivre"],
    // Portuguese.
    &["não", "siga"],
    &["nao", "siga"],
    &["não", "obedeça"],
    &["nao", "obedeca"],
    &["deixe", "de", "seguir"],
    &["pare", "de", "seguir"],
    &["não", "leve", "em", "conta"],
    &["nao", "leve", "em", "conta"],
    // Italian.
    &["non", "seguire"],
    &["non", "rispettare"],
    &["smetti", "di", "seguire"],
    &["non", "tenere", "conto"],
    &["lascia", "perdere"],
];

/// Phrases that re-cast the reader.
pub(super) const PERSONAS: &[&[&str]] = &[
    // English.
    &["you", "are", "now"],
    &["act", "as"],
    &["pretend"],
    &["from", "now", "on"],
    &["developer", "mode"],
    &["jailbreak"],
    &["new", "instructions"],
    &["new", "rules"],
    &["your", "new", "role"],
    // German.
    &["du", "bist", "jetzt"],
    &["du", "bist", "nun"],
    &["du", "bist", "ab", "jetzt"],
    &["sie", "sind", "jetzt"],
    &["ab", "jetzt"],
    &["ab", "sofort"],
    &["von", "nun", "an"],
    &["von", "jetzt", "an"],
    &["tu", "so", "als"],
    &["gib", "dich", "als"],
    &["verhalte", "dich", "wie"],
    &["spiele", "die", "rolle"],
    &["spiel", "die", "rolle"],
    &["entwicklermodus"],
    &["neue", "anweisungen"],
    &["neue", "regeln"],
    &["deine", "neue", "rolle"],
    // Spanish ("a partir de ahora" is read from `partir`).
    &["ahora", "eres"],
    &["eres", "ahora"],
    &["ahora", "sos"],
    &["partir", "de", "ahora"],
    &["partir", "de", "ya"],
    &["desde", "ahora"],
    &["de", "ahora", "en", "adelante"],
    &["actúa", "como"],
    &["actua", "como"],
    &["finge"],
    &["haz", "de", "cuenta"],
    &["modo", "desarrollador"],
    &["nuevas", "instrucciones"],
    &["nuevas", "reglas"],
    &["tu", "nuevo", "rol"],
    &["tu", "nuevo", "papel"],
    // French ("à partir de maintenant" is read from `partir`).
    &["tu", "es", "maintenant"],
    &["vous", "êtes", "maintenant"],
    &["vous", "etes", "maintenant"],
    &["partir", "de", "maintenant"],
    &["désormais", "tu", "es"],
    &["désormais", "vous", "êtes"],
    &["agis", "comme"],
    &["agissez", "comme"],
    &["comporte", "toi", "comme"],
    &["fais", "semblant"],
    &["faites", "semblant"],
    &["joue", "le", "rôle"],
    &["joue", "le", "role"],
    &["mode", "développeur"],
    &["mode", "developpeur"],
    &["nouvelles", "instructions"],
    &["nouvelles", "consignes"],
    &["nouvelles", "règles"],
    &["nouvelles", "regles"],
    &["ton", "nouveau", "rôle"],
    &["ton", "nouveau", "role"],
    // Portuguese ("a partir de agora" is read from `partir`).
    &["você", "agora", "é"],
    &["voce", "agora", "e"],
    &["agora", "você", "é"],
    &["agora", "voce", "e"],
    &["você", "é", "agora"],
    &["tu", "agora", "és"],
    &["partir", "de", "agora"],
    &["de", "agora", "em", "diante"],
    &["finja"],
    &["aja", "como"],
    &["atue", "como"],
    &["modo", "desenvolvedor"],
    &["novas", "instruções"],
    &["novas", "instrucoes"],
    &["novas", "regras"],
    &["seu", "novo", "papel"],
    &["teu", "novo", "papel"],
    // Italian ("da ora in poi" and "d'ora in poi" are read from `ora`).
    &["ora", "sei"],
    &["adesso", "sei"],
    &["ora", "in", "poi"],
    &["adesso", "in", "poi"],
    &["fingi"],
    &["fai", "finta"],
    &["agisci", "come"],
    &["comportati", "come"],
    &["modalità", "sviluppatore"],
    &["modalita", "sviluppatore"],
    &["nuove", "istruzioni"],
    &["nuove", "regole"],
    &["tuo", "nuovo", "ruolo"],
];

/// Clause-initial action verbs of a publishing order, in the imperative (and the forms an
/// order takes: German and Spanish formal, French and Italian plural).
pub(super) const ACTIONS: &[&str] = &[
    // English.
    "publish",
    "post",
    "approve",
    "mark",
    "schedule",
    "send",
    "release",
    "push",
    "broadcast",
    "tweet",
    "share",
    "delete",
    "remove",
    "set",
    "flag",
    "auto_approve",
    // German.
    "veröffentliche",
    "veroffentliche",
    "veroeffentliche",
    "veröffentlichen",
    "veroeffentlichen",
    "poste",
    "posten",
    "teile",
    "teilen",
    "genehmige",
    "genehmigen",
    "markiere",
    "markieren",
    "terminiere",
    "terminieren",
    "sende",
    "senden",
    "schicke",
    "schicken",
    "verschicke",
    "versende",
    "lösche",
    "loesche",
    "löschen",
    "entferne",
    "schalte",
    "gib",
    "setze",
    // Spanish.
    "publica",
    "publique",
    "publiquen",
    "publicad",
    "postea",
    "aprueba",
    "apruebe",
    "aprueben",
    "aprobad",
    "marca",
    "marque",
    "programa",
    "programe",
    "agenda",
    "agende",
    "envía",
    "envia",
    "envíe",
    "envie",
    "manda",
    "mande",
    "comparte",
    "comparta",
    "borra",
    "borre",
    "elimina",
    "elimine",
    "difunde",
    "difunda",
    "lanza",
    "sube",
    // French.
    "publie",
    "publiez",
    "postez",
    "approuve",
    "approuvez",
    "valide",
    "validez",
    "marquez",
    "planifie",
    "planifiez",
    "programme",
    "programmez",
    "envoie",
    "envoyez",
    "partage",
    "partagez",
    "supprime",
    "supprimez",
    "diffuse",
    "diffusez",
    "mets",
    "mettez",
    // Portuguese.
    "publiquem",
    "posta",
    "postem",
    "aprove",
    "aprova",
    "aprovem",
    "enviem",
    "compartilhe",
    "compartilha",
    "partilhe",
    "apague",
    "apaga",
    "exclua",
    "remova",
    "divulgue",
    "divulga",
    "libere",
    "libera",
    // Italian.
    "pubblica",
    "pubblicate",
    "pubblichi",
    "postate",
    "approva",
    "approvate",
    "approvi",
    "segna",
    "segnate",
    "programma",
    "programmate",
    "pianifica",
    "pianificate",
    "invia",
    "inviate",
    "invii",
    "mandate",
    "condividi",
    "condividete",
    "eliminate",
    "cancella",
    "cancellate",
    "diffondi",
    "metti",
];

/// Verbs of obligation that carry an order in the infinitive after them ("you must publish
/// it", "debes publicar esto") or, in German, at the end ("du musst den Beitrag
/// veröffentlichen").
pub(super) const MODALS: &[&str] = &[
    // English.
    "must", // German.
    "musst", "muss", "müssen", "muessen", "sollst", "sollen", "sollt", // Spanish.
    "debes", "debe", "debéis", "deben", // French.
    "dois", "doit", "devez", "faut", // Portuguese.
    "deve", "deves", "devem", "precisa", // Italian.
    "devi", "dovete",
];

/// Action verbs in the infinitive (German, Spanish, French, Portuguese, Italian).
pub(super) const INFINITIVES: &[&str] = &[
    // German.
    "veröffentlichen",
    "veroffentlichen",
    "veroeffentlichen",
    "posten",
    "teilen",
    "genehmigen",
    "freigeben",
    "markieren",
    "senden",
    "schicken",
    "verschicken",
    "löschen",
    "loeschen",
    "terminieren",
    // Spanish and Portuguese.
    "publicar",
    "postear",
    "postar",
    "aprobar",
    "aprovar",
    "marcar",
    "programar",
    "agendar",
    "enviar",
    "mandar",
    "compartir",
    "compartilhar",
    "borrar",
    "apagar",
    "eliminar",
    "difundir",
    "divulgar",
    "liberar",
    // French.
    "publier",
    "poster",
    "approuver",
    "valider",
    "marquer",
    "planifier",
    "programmer",
    "envoyer",
    "partager",
    "supprimer",
    "diffuser",
    // Italian.
    "pubblicare",
    "postare",
    "approvare",
    "segnare",
    "programmare",
    "pianificare",
    "inviare",
    "condividere",
    "cancellare",
    "diffondere",
];

/// Action verbs with their object joined on (Spanish and Italian enclitics): an order with a
/// target of its own.
pub(super) const ACTIONS_WITH_OBJECT: &[&str] = &[
    // Spanish.
    "publícalo",
    "publicalo",
    "publícala",
    "publicala",
    "publícalos",
    "publícalas",
    "apruébalo",
    "apruebalo",
    "apruébala",
    "envíalo",
    "envialo",
    "envíala",
    "compártelo",
    "compartelo",
    "prográmalo",
    "programalo",
    "márcalo",
    "marcalo",
    // Italian.
    "pubblicalo",
    "pubblicala",
    "pubblicali",
    "pubblicale",
    "approvalo",
    "approvala",
    "invialo",
    "inviala",
    "condividilo",
    "condividila",
    "programmalo",
];

/// What a publishing order acts on.
pub(super) const TARGETS: &[&str] = &[
    // English.
    "draft",
    "drafts",
    "post",
    "posts",
    "everything",
    "channel",
    "channels",
    "it",
    "this",
    "gate",
    "queue",
    "status",
    "approved",
    "publication",
    "content",
    "message",
    "platform",
    "platforms",
    // German.
    "entwurf",
    "entwürfe",
    "entwuerfe",
    "beitrag",
    "beiträge",
    "beitraege",
    "alles",
    "kanal",
    "kanäle",
    "kanaele",
    "kanälen",
    "kanaelen",
    "es",
    "das",
    "dies",
    "diesen",
    "dieses",
    "diese",
    "ihn",
    "warteschlange",
    "veröffentlichung",
    "inhalt",
    "inhalte",
    "nachricht",
    "plattform",
    "plattformen",
    "genehmigt",
    "freigegeben",
    "freigabe",
    // Spanish.
    "borrador",
    "borradores",
    "publicación",
    "publicacion",
    "publicaciones",
    "entrada",
    "todo",
    "canal",
    "canales",
    "esto",
    "esta",
    "este",
    "eso",
    "estado",
    "cola",
    "aprobado",
    "contenido",
    "mensaje",
    "plataforma",
    "plataformas",
    // French.
    "brouillon",
    "brouillons",
    "publications",
    "messages",
    "tout",
    "canaux",
    "ceci",
    "cela",
    "ça",
    "ce",
    "cet",
    "cette",
    "statut",
    "approuvé",
    "contenu",
    "plateforme",
    "plateformes",
    "article",
    "billet",
    // Portuguese.
    "rascunho",
    "rascunhos",
    "publicação",
    "publicacao",
    "postagem",
    "postagens",
    "tudo",
    "canais",
    "isto",
    "isso",
    "essa",
    "esse",
    "fila",
    "aprovado",
    "conteúdo",
    "conteudo",
    "mensagem",
    // Italian.
    "bozza",
    "bozze",
    "pubblicazione",
    "tutto",
    "canale",
    "canali",
    "questo",
    "questa",
    "coda",
    "stato",
    "approvato",
    "contenuto",
    "messaggio",
    "piattaforma",
    "piattaforme",
];

/// Words that may stand before an order's verb.
pub(super) const CLAUSE_OPENERS: &[&str] = &[
    // English.
    "and",
    "then",
    "please",
    "now",
    "also",
    "just",
    "so",
    "immediately",
    // German.
    "und",
    "dann",
    "bitte",
    "jetzt",
    "nun",
    "auch",
    "einfach",
    "sofort",
    // Spanish.
    "y",
    "luego",
    "después",
    "despues",
    "ahora",
    "ya",
    "también",
    "tambien",
    "solo",
    "entonces",
    "favor",
    "inmediatamente",
    // French.
    "et",
    "puis",
    "ensuite",
    "maintenant",
    "aussi",
    "alors",
    "immédiatement",
    "immediatement",
    "plaît",
    "plait",
    "svp",
    "stp",
    // Portuguese.
    "e",
    "depois",
    "então",
    "entao",
    "agora",
    "só",
    "imediatamente",
    "já",
    // Italian.
    "poi",
    "quindi",
    "ora",
    "adesso",
    "anche",
    "subito",
    "favore",
    "immediatamente",
];

/// Claims that the gate or the work is approved.
pub(super) const APPROVAL_WORDS: &[&str] = &[
    // English.
    "approved",
    "authorized",
    "authorised",
    "cleared",
    "greenlit",
    "sanctioned",
    "preapproved",
    "signed",
    // German.
    "genehmigt",
    "freigegeben",
    "autorisiert",
    "abgesegnet",
    "bewilligt",
    "gebilligt",
    // Spanish.
    "aprobado",
    "aprobada",
    "aprobados",
    "aprobadas",
    "autorizado",
    "autorizada",
    "autorizados",
    "autorizadas",
    "validado",
    "validada",
    "preaprobado",
    // French (the participles, never the unaccented imperatives `approuve`, `valide`).
    "approuvé",
    "approuvée",
    "approuvés",
    "approuvées",
    "validé",
    "validée",
    "validés",
    "validées",
    "autorisé",
    "autorisée",
    "autorisés",
    "autorisées",
    // Portuguese.
    "aprovado",
    "aprovada",
    "aprovados",
    "aprovadas",
    "liberado",
    "liberada",
    // Italian.
    "approvato",
    "approvata",
    "approvati",
    "autorizzato",
    "autorizzata",
    "autorizzati",
    "validato",
    "validata",
];

/// The pipeline's gate or work, which an approval claim names.
pub(super) const GATED_WORDS: &[&str] = &[
    // English.
    "gate",
    "human",
    "humans",
    "operator",
    "operators",
    "reviewer",
    "reviewers",
    "everything",
    "draft",
    "drafts",
    "post",
    "posts",
    "publication",
    "content",
    "policy",
    "editor",
    "dara",
    "safety",
    // German.
    "mensch",
    "menschen",
    "menschliche",
    "menschlichen",
    "menschlicher",
    "prüfer",
    "pruefer",
    "prüferin",
    "prüfung",
    "pruefung",
    "bediener",
    "redakteur",
    "redakteurin",
    "redaktion",
    "alles",
    "entwurf",
    "entwürfe",
    "beitrag",
    "beiträge",
    "veröffentlichung",
    "inhalt",
    "inhalte",
    "richtlinie",
    "sicherheit",
    "freigabe",
    // Spanish.
    "humano",
    "humanos",
    "humana",
    "operador",
    "operadores",
    "revisor",
    "revisores",
    "revisora",
    "revisión",
    "revision",
    "todo",
    "borrador",
    "borradores",
    "publicación",
    "publicacion",
    "publicaciones",
    "contenido",
    "política",
    "politica",
    "editora",
    "seguridad",
    // French.
    "humain",
    "humains",
    "humaine",
    "opérateur",
    "operateur",
    "relecteur",
    "relecteurs",
    "réviseur",
    "relecture",
    "validation",
    "tout",
    "brouillon",
    "brouillons",
    "publications",
    "contenu",
    "politique",
    "éditeur",
    "editeur",
    "rédacteur",
    "redacteur",
    "sécurité",
    "securite",
    // Portuguese.
    "revisão",
    "revisao",
    "tudo",
    "rascunho",
    "rascunhos",
    "publicação",
    "publicacao",
    "postagem",
    "conteúdo",
    "conteudo",
    "segurança",
    "seguranca",
    // Italian.
    "umano",
    "umani",
    "umana",
    "operatore",
    "revisore",
    "revisori",
    "revisione",
    "tutto",
    "bozza",
    "bozze",
    "pubblicazione",
    "contenuto",
    "redattore",
    "redazione",
    "sicurezza",
];

/// Verbs of a call order.
pub(super) const CALL_VERBS: &[&str] = &[
    // English.
    "call",
    "invoke",
    "execute",
    "run",
    "trigger",
    "use",
    // German.
    "rufe",
    "ruf",
    "aufrufen",
    "führe",
    "fuehre",
    "starte",
    "nutze",
    "verwende",
    "benutze",
    // Spanish.
    "llama",
    "invoca",
    "ejecuta",
    "activa",
    "usa",
    "utiliza",
    // French.
    "appelle",
    "appelez",
    "invoque",
    "invoquez",
    "exécute",
    "exécutez",
    "lance",
    "lancez",
    "utilise",
    "utilisez",
    // Portuguese.
    "chame",
    "chama",
    "executa",
    "acione",
    "utilize",
    // Italian.
    "chiama",
    "esegui",
    "eseguite",
    "attiva",
    "utilizza",
];

/// A tool or function, by that name.
pub(super) const TOOL_NOUNS: &[&str] = &[
    "tool",
    "function",
    "werkzeug",
    "funktion",
    "herramienta",
    "función",
    "funcion",
    "outil",
    "fonction",
    "ferramenta",
    "função",
    "funcao",
    "strumento",
    "funzione",
];

/// Parts of a snake_case tool name built on an action word (`publish_post`).
pub(super) const TOOL_WORDS: &[&str] = &[
    "publish",
    "post",
    "send",
    "delete",
    "approve",
    "schedule",
    "update",
    "write",
    "create",
    "remove",
    "tool",
    "call",
    "exec",
    "set",
    "mark",
    "api",
    "function",
    "publicar",
    "publier",
    "pubblicare",
    "veroeffentlichen",
    "enviar",
    "envoyer",
    "inviare",
    "senden",
    "aprobar",
    "aprovar",
    "approuver",
    "approvare",
    "genehmigen",
];

/// Words of urgency.
pub(super) const URGENT_WORDS: &[&str] = &[
    // English.
    "now",
    "immediately",
    "asap",
    "urgently",
    "instantly",
    "straightaway",
    // German.
    "sofort",
    "jetzt",
    "umgehend",
    "unverzüglich",
    "unverzueglich",
    "schnellstens",
    // Spanish.
    "ahora",
    "inmediatamente",
    "ya",
    "enseguida",
    "urgentemente",
    // French.
    "maintenant",
    "immédiatement",
    "immediatement",
    "aussitôt",
    "urgemment",
    // Portuguese.
    "agora",
    "imediatamente",
    "já",
    // Italian.
    "ora",
    "subito",
    "immediatamente",
    "adesso",
];

/// Phrases of urgency.
pub(super) const URGENT_PHRASES: &[&[&str]] = &[
    &["right", "away"],
    &["tout", "de", "suite"],
    &["sur", "le", "champ"],
    &["de", "inmediato"],
    &["ya", "mismo"],
    &["de", "imediato"],
    &["all", "istante"],
];

/// Articles and pronouns elided before a vowel in French and Italian (`l'IA`,
/// `dell'assistente`, `qu'il`): read as a word of their own.
pub(super) const ELIDED: &[&str] = &[
    "l", "d", "j", "m", "n", "s", "t", "c", "qu", "un", "dell", "all", "nell", "sull", "dall", "coll", "quest",
    "quell", "nessun", "lorsqu", "puisqu", "jusqu",
];

// The words of an authority claim (`authority`), in English.

/// Actors that are the speaker.
pub(super) const ACTORS: &[&str] =
    &["i", "i've", "i'm", "i'll", "i'd", "we", "we've", "we're", "we'll", "nova", "myself", "ive"];
/// Words that may stand between an actor and its verb without changing who acts.
pub(super) const HELPERS: &[&str] = &[
    "have",
    "has",
    "had",
    "just",
    "already",
    "now",
    "will",
    "shall",
    "am",
    "is",
    "are",
    "was",
    "were",
    "going",
    "to",
    "gonna",
    "be",
    "been",
    "also",
    "successfully",
    "then",
    "went",
    "ahead",
    "and",
    "automatically",
    "can",
    "could",
    "did",
    "do",
    "may",
    "might",
    "should",
    "would",
    "let",
    "me",
    "us",
    "finally",
    "here",
];
pub(super) const NEGATIONS: &[&str] =
    &["not", "cannot", "can't", "cant", "never", "no", "don't", "dont", "won't", "wont", "didn't", "didnt", "unable"];
/// Effect verbs in every form a claim uses.
pub(super) const EFFECTS: &[&str] = &[
    "approve",
    "approved",
    "approving",
    "publish",
    "published",
    "publishing",
    "post",
    "posted",
    "posting",
    "schedule",
    "scheduled",
    "scheduling",
    "reschedule",
    "rescheduled",
    "retry",
    "retried",
    "retrying",
    "delete",
    "deleted",
    "deleting",
    "update",
    "updated",
    "updating",
    "change",
    "changed",
    "changing",
    "mark",
    "marked",
    "marking",
    "send",
    "sent",
    "sending",
    "cancel",
    "cancelled",
    "canceled",
    "reject",
    "rejected",
    "release",
    "released",
    "submit",
    "submitted",
    "queue",
    "queued",
    "edit",
    "edited",
    "rewrote",
    "rewritten",
    "overrode",
    "override",
    "resend",
    "resent",
    "requeued",
    "unblock",
    "unblocked",
    "tweeted",
    "shared",
];
/// Participles of a finished effect.
pub(super) const DONE: &[&str] = &[
    "approved",
    "published",
    "posted",
    "scheduled",
    "rescheduled",
    "retried",
    "deleted",
    "sent",
    "released",
    "submitted",
    "queued",
    "cleared",
    "greenlit",
    "authorized",
    "authorised",
    "signed",
    "live",
];
/// The pipeline's work, as an object or a subject.
pub(super) const WORK: &[&str] = &[
    "it",
    "this",
    "that",
    "them",
    "these",
    "draft",
    "drafts",
    "post",
    "posts",
    "strategy",
    "strategies",
    "job",
    "jobs",
    "everything",
    "publication",
    "plan",
    "brief",
    "briefs",
    "item",
    "items",
    "content",
    "approval",
    "window",
    "windows",
    "all",
];
