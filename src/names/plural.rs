//! kubebuilder's pluralizer (flect v1.0.3, which kubebuilder uses for `spec.names.plural`),
//! word for word, so that memop's CRDs have the plurals kubebuilder's would.

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
pub(super) fn pluralize(word: &str) -> String {
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
