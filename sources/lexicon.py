"""The words the meaning check (meaning.py) reads a claim by: a light stemmer, stop words, negations,
direction words (rose/fell, more/less, before/after, won/lost ...) and a small table of synonyms of common
news verbs and nouns. Plain tables, no model and nothing downloaded; built once at import from literals.
"""

from __future__ import annotations

import re

_CONTRACTIONS = [(re.compile(r"(?i)\b(can)'t\b"), r"\1 not"), (re.compile(r"(?i)\bwon't\b"), "will not"),
                 (re.compile(r"(?i)\bshan't\b"), "shall not"), (re.compile(r"(?i)(\w)n't\b"), r"\1 not"),
                 (re.compile(r"(?i)(\w)'(?:s|re|ve|ll|d|m)\b"), r"\1")]


def open_contractions(text: str) -> str:
    """`didn't` as `did not`, `can't` as `can not`, `won't` as `will not`; `'s`, `'re`, `'ll` ... dropped."""
    if "'" not in text:
        return text
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return text


def stem(word: str) -> str:
    """A light stem: lower-cased, a plural or -ed/-ing/-ly ending taken off, then the first six letters."""
    w = word.casefold()
    if len(w) > 4 and w.endswith(("ies", "ied")):
        w = w[:-3] + "y"
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith(("ed", "ly")) or len(w) > 3 and w.endswith("es") and w[-3] in "sxz":
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsaeiou":
        w = w[:-1]  # planned -> plann -> plan
    return w[:6]


def _words(text: str) -> set[str]:
    return set(text.split())


# function words and words that say nothing a source must hold (attribution, hedges, connectives)
STOP = _words("""a an the and or but if then than that this these those there here it its it's they them their
theirs he him his she her hers we us our ours you your yours i me my mine who whom whose which what when where
why how whether as at by for from in into of off on onto out over per to toward towards upon via with within
be is are was were been being am have has had having do does did doing done will would shall should can could
may might must ought also just still even yet so too very quite rather already again ever only both either each
every all any some such other another own same few many much several various one ones about around after before
while during since until till because although though however thus therefore hence meanwhile moreover besides
instead indeed perhaps maybe now then today currently recently reportedly reported according accordingly
said says say saying told tells stated states added adds noted notes explained claimed announced wrote writes
mr mrs ms dr st jr sr inc co ltd etc vs like including include includes included among between against across
through throughout along beside beyond within without under above below up down upon well way ways thing things
lot lots kind kinds sort part parts number numbers really actually simply certainly clearly likely probably
let lets get gets got getting go goes went gone going make makes made making take takes took taken come comes
came just new first second last next year years month months week weeks day days time times
approximately roughly nearly almost additionally furthermore moreover overall notably specifically specific
unspecified certain particular respectively two three four five six seven eight nine ten twice known considered
based despite eventually latter further given involving regarding yes yeah okay ok oh
group speaker speakers participant participants representative""")  # the last: who talks, in a meeting's summary
# after/before, more/less, without, above/below, up/down are stop words for matching, but reading.py reads directions

_DOCUMENT = (r"(?:the|this|that)\s+(?:given\s+|provided\s+|above\s+|original\s+)?(?:passage|article|text|document|"
             r"source|summary|story|report|piece|excerpt|extract|content|post|page|snippet|conversation|dialogue|"
             r"transcript|email|call|meeting|discussion|news|paragraph|podcast|episode|author|writer|narrator)")
_TELLS = (r"(?:discusses|discussed|mentions|mentioned|describes|described|states|stated|says|said|notes|noted|"
          r"reports|reported|highlights|highlighted|explains|explained|covers|covered|talks\s+about|is\s+about|"
          r"focuses\s+on|provides\s+(?:information\s+)?(?:about|on)|presents|suggests|indicates|emphasi[sz]es|"
          r"delves\s+into|touches\s+(?:on|upon)|concludes|goes\s+on\s+to\s+(?:say|describe|explain|mention)|"
          r"tells\s+(?:of|about)|reveals|shows|adds|claims|argues|outlines|details|informs\s+(?:us\s+)?(?:about|of)|"
          r"showcases|specifies|introduces|underscores|illustrates|explores|examines|summari[sz]es|recounts|lists|"
          r"begins\s+with|commences\s+with|starts\s+with|ends\s+with|includes)")
_FRAMING = (rf"""(?ix)^\W*(?:note\s*:\s*|please\s+note\s+(?:that\s+)?|
    (?:(?:additionally|furthermore|moreover|also|overall|in\s+summary|in\s+conclusion|in\s+short|finally|lastly)
    \s*,?\s+)?(?:(?:according\s+to|in)\s+{_DOCUMENT}\s*,\s*|
    (?:{_DOCUMENT}|it)\s+(?:also\s+|then\s+|further\s+|briefly\s+|additionally\s+)?{_TELLS}(?:\s+that|\s*:)?\s+))""")
_ABOUT_THE_SOURCE = (rf"(?i)^\W*(?:note\s*:\s*)?(?:the|this)\s+summary\b|"
                     rf"^\W*(?:{_DOCUMENT}|it)\s+(?:does\s+not|doesn't|did\s+not|didn't)\s+"
                     r"(?:mention|specify|provide|say|state|include|give|contain|indicate|detail)|"
                     r"^\W*(?:there\s+is\s+)?no\s+(?:further\s+|other\s+|additional\s+)?"
                     r"(?:information|details?|mention)\s+(?:is\s+|are\s+)?(?:given|provided|available)\b")


def unframed(claim: str) -> str:
    """The claim without a summary's framing: "The passage discusses X" -> "X", "It also mentions that X" -> "X",
    "According to the article, X" -> "X", "Note: X" -> "X"."""
    m = re.match(_FRAMING, claim)  # compiled on the first claim (re keeps it), not at import
    return claim[m.end():] if m and m.end() < len(claim) else claim


def unquoted(claim: str) -> str:
    """A claim written wholly inside one pair of quotation marks (a model quoting its own sentence) without them;
    any other claim as it is."""
    inside = claim.strip()
    if len(inside) > 2 and inside[0] in "\"“" and inside.rstrip(".")[-1:] in "\"”" and \
            not any(q in inside[1:].rstrip(".")[:-1] for q in "\"“”"):
        return inside[1:].rstrip(".")[:-1]
    return claim


def about_the_source(claim: str) -> bool:
    """A remark on what the source leaves out ("The passage does not mention ...", "No information is given
    about ..."): nothing a reader could check against the source."""
    return bool(re.match(_ABOUT_THE_SOURCE, claim))


NEGATIONS = _words("not no never cannot none nobody nothing neither nor nowhere")
# a place's kind before "of" and its name: "the city of Milan" says no more than "Milan"
# a person's title or role before their surname ("President Reagan", "Mr Charney", "striker Tevez"): a source
# naming one so names the same person a claim gives a first name the source leaves out (meaning.py)
ROLES = _words("""mr mrs ms miss mx dr prof professor sir dame lord lady president vice senator congressman
congresswoman representative governor mayor judge justice minister secretary chancellor premier king queen prince
princess duke duchess emperor pope cardinal bishop archbishop reverend rev father pastor rabbi imam sheikh general
colonel major captain capt lieutenant sergeant admiral commander officer detective inspector constable sheriff chief
chairman chairwoman chair ceo executive director founder coach manager boss striker midfielder defender goalkeeper
keeper winger forward skipper player star actor actress singer rapper author writer spokesman spokeswoman
spokesperson lawyer attorney doctor nurse agent ambassador councillor councilor leader mp""")
# names a source may write as the kind of thing they name, as a synonym's group says ("Covid": "the virus")
KIND_NAMES = _words("covid coronavirus")
PLACE_KINDS = _words("city cities town towns village county state country island region province district borough "
                     "port capital nation republic kingdom")

# direction words: word -> (axis, sign). A claim saying one sign where its passage says only the other is contradicted.
_DIRECTIONS = {
    "change": ("rise rose risen rises rising increase increased increases increasing grow grew grown grows growing "
               "growth gain gained gains climb climbed climbs climbing jump jumped jumps surge surged surges "
               "soar soared soars expand expanded expands expansion boost boosted boosts raise raised raises "
               "raising",
               "fall fell fallen falls falling decrease decreased decreases decreasing decline declined declines "
               "declining drop dropped drops dropping shrink shrank shrunk shrinks shrinking plunge plunged "
               "plunges slump slumped slumps tumble tumbled dip dipped dips reduce reduced reduces reduction "
               "contracted contraction lowered"),  # not "contract": in news, mostly a deal
    "degree": ("more most majority higher highest greater greatest larger largest bigger biggest maximum above "
               "exceed exceeded exceeds increasingly",
               "less least minority lower lowest smaller smallest fewer fewest minimum below decreasingly"),
    "quality": ("better best improve improved improves improvement strong stronger strongest positive",
                "worse worst worsen worsened worsens deterioration weak weaker weakest negative"),
    "time": ("before earlier earliest prior previously", "after later latest afterwards subsequently"),
    "outcome": ("win won wins winning winner victory victorious succeed succeeded success successful",
                "lose lost loses losing loser defeat defeated fail failed fails failure unsuccessful"),
    "verdict": ("approve approved approves approval accept accepted accepts allow allowed allows permit permitted "
                "legal", "reject rejected rejects rejection refuse refused refuses ban banned bans forbid forbade "
                     "forbidden illegal"),
    "order": ("first", "last"),
    "vertical": ("up upward upwards", "down downward downwards"),
    "presence": ("open opened opens opening", "close closed closes closing shut"),
}
DIRECTIONS: dict[str, tuple[str, int]] = {}
for _axis, (_up, _down) in _DIRECTIONS.items():
    DIRECTIONS.update({w: (_axis, 1) for w in _up.split()})
    DIRECTIONS.update({w: (_axis, -1) for w in _down.split()})

# groups of words that say the same thing in news text; a claim's word matches any word of its group
_SYNONYMS = """
buy bought buys buying purchase purchased acquire acquired acquisition
sell sold sells selling
company companies firm firms business businesses corporation
help helped helps aid aided assist assisted support supported
begin began begun begins start started starts launch launched launches commence commenced
end ended ends finish finished conclude concluded
big large huge major massive vast
small little tiny minor
show showed shown shows reveal revealed reveals indicate indicated indicates demonstrate demonstrated
use used uses using utilize utilized employ employed
need needed needs require required requires
try tried tries attempt attempted
receive received receives obtain obtained
give gave given gives provide provided provides offer offered offers
make create created creates produce produced
people persons individuals residents inhabitants population populace
figure figures statistics stats data
children kids
car cars vehicle vehicles automobile
job jobs employment work
country countries nation nations
city cities town towns
money funds funding cash
law laws legislation
rule rules regulation regulations
plan plans proposal proposals scheme
meet met meeting talks
kill killed kills slay slain
die died dies dead death
hurt injure injured injuries wounded
talk talked discuss discussed
think thought thinks believe believed believes
fast quick quickly rapid rapidly swift
important key significant crucial vital
problem problems issue issues
chance opportunity
area region
shop shops store stores
film films movie movies
home homes house houses
leader head chief
build built builds construct constructed
choose chose chosen select selected pick picked
ask asked request requested
answer answered reply replied respond responded
study studies research
expert experts specialist specialists analyst analysts
official officials authorities
worker workers employee employees staff
buildings structure structures
speak spoke spoken
student students pupil pupils
doctor doctors physician physicians
woman women female
man men male
amount quantity volume
price prices cost costs
carry carried carries transport transported transports
reach reached reaches hit
coronavirus covid virus pandemic
"""
SYNONYMS: dict[str, str] = {}
for _line in _SYNONYMS.strip().splitlines():
    _group = _line.split()
    for _w in _group:
        SYNONYMS.setdefault(_w, "=" + stem(_group[0]))
        SYNONYMS.setdefault(stem(_w), "=" + stem(_group[0]))
