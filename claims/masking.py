"""Masking of customer personal data before it is stored, logged or sent to a model.

A rule set for the forms New Zealand customers write, measured on a corpus
(``claims/masking_corpus.py``; ``python manage.py masking_check`` prints the
figures). What is masked, each with a labelled placeholder:

- emails; phone numbers in NZ and international forms, with or without a
  leading 0 or + ("021 555 0142", "64 21 555 0193", "(09) 555 0123");
- card numbers, card security codes (CVV/CVC), NZ bank accounts
  ("12-3456-7890123-00"), IRD numbers ("123-456-789", "112233445");
- dates of birth: any date said to be one ("my birthday is 17/03/1985") and
  any full date before 2006 (a customer's event dates are recent);
- driver licence numbers (two letters and six digits, any case or spacing),
  vehicle plates (said to be one, or three letters and three digits);
- street addresses ("27 Example Road", "Flat 3, 27 Example Road", "3/27
  Example Rd, Mount Eden, Auckland 1024");
- names: introduced ("my name is", "I'm", "this is", "Hemi Parata here"),
  signed ("Kind regards, Mereana Kotuku", "Ngā mihi, Rāwiri"), named as a
  relation ("my wife Aroha"), common NZ first names (te reo Māori included)
  with the surname after them, the holder's name on the schedule, and names
  learnt earlier in the conversation (kept only as keyed digests).

What is kept: policy numbers (the record's key), clause ids, claim and
reference numbers of eight digits or fewer, amounts, and recent dates (the
date of an event is a fact the agent needs).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass

# --- numbers and contact details ------------------------------------------------

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_BANK = re.compile(r"(?<![\w-])\d{2}[- ]\d{4}[- ]\d{7}[- ]\d{2,3}(?![\w-])")
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_CVV = re.compile(
    r"\b(?:cvv2?|cvc2?|csc|security code|card code|code on the back)\b"
    r"(?:\s*(?:is|was|number|no\.?|:|-|=))*\s*(\d{3,4})\b",
    re.IGNORECASE,
)
_IRD = re.compile(
    r"(?<![\w-])(?:\d{3}[- ]\d{3}[- ]\d{3}|\d{2}[- ]\d{3}[- ]\d{3}|\d{9})(?![\w-])"
    r"|(?<=\bIRD)(?:\s*(?:number|no\.?|num|#|is|:))*\s*\d{8,9}\b",
    re.IGNORECASE,
)
_PHONE = re.compile(
    r"(?<![\w+-])(?:"
    r"(?:\+|00)\d{1,3}[\s.-]?\(?\d{1,4}\)?(?:[\s.-]?\d{2,4}){2,3}"  # +64 21 555 0142
    r"|64[\s.-]?\(?0?\d{1,2}\)?(?:[\s.-]?\d{3,4}){2}"  # 64 21 555 0193
    r"|\(0\d{1,4}\)[\s.-]?\d{3,4}[\s.-]?\d{3,4}"  # (09) 555 0123
    r"|0\d{1,4}(?:[\s.-]?\d{2,4}){2,3}"  # 021 555 0142, 0800 555 123
    r"|0\d{8,10}"  # 0215550142
    r")(?![\w-])"
)
_PHONE_CUE = re.compile(
    r"\b(?:ph|phone|mobile|mob|cell|call me on|text me on|landline)\b[\s:.]*"
    r"(\d{3}[\s.-]?\d{4}|\d{7,10})\b",
    re.IGNORECASE,
)

# --- dates of birth ---------------------------------------------------------------

_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|"
    r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATE = (
    rf"(?:\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:\d{{4}}|\d{{2}})|\d{{4}}-\d{{2}}-\d{{2}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}\.?,?\s+\d{{4}}"
    rf"|{_MONTHS}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}})"
)
_DOB = re.compile(
    rf"\b(?:dob|d\.o\.b\.?|date of birth|birth ?date|birthday|born(?: on| in)?|b\.)"
    rf"(?:\s*(?:is|was|:|-|=|on))*\s*({_DATE})",
    re.IGNORECASE,
)
_ANY_DATE = re.compile(rf"(?<![\w/.-]){_DATE}(?![\w/-])", re.IGNORECASE)
_YEAR = re.compile(r"(\d{4})|(?<=[/.-])(\d{2})$")

# --- licences, plates, addresses ---------------------------------------------------

_LICENCE = re.compile(r"(?<![\w-])[A-Za-z]{2}\s?\d{6}(?![\w-])")
_PLATE_CUE = re.compile(
    r"\b(?:plate|plates|rego|registration|reg\.?|number plate)"
    r"(?:\s*(?:is|was|number|no\.?|:|-))*\s*([A-Za-z0-9]{2,7})\b",
    re.IGNORECASE,
)
_PLATE = re.compile(r"(?<![\w-])[A-Z]{3}\d{3}(?![\w-])|(?<![\w-])[A-Z]{2}\d{4}(?![\w-])")
_STREET_TYPES = (
    r"(?:street|st|road|rd|avenue|ave|drive|dr|place|pl|terrace|tce|crescent|cres|lane|ln|"
    r"way|grove|gr|close|parade|pde|highway|hwy|court|ct|boulevard|blvd|rise|quay|square|sq|"
    r"esplanade|mews|heights|hts|glade|track|row|view|loop)"
)
_ADDRESS = re.compile(
    rf"(?:\b(?:flat|unit|apt|apartment)\s+\d+[A-Za-z]?,?\s+)?"
    rf"(?<![\w-])\d{{1,4}}[A-Za-z]?(?:/\d{{1,4}}[A-Za-z]?)?,?\s+"
    rf"(?:[A-Za-z\u0100-\u017f'-]+\s+){{1,3}}{_STREET_TYPES}\b\.?"
    rf"(?:,?\s+(?:[A-Z][A-Za-z\u0100-\u017f'-]+\s?){{1,3}})*(?:,?\s+\d{{4}})?",
    re.IGNORECASE,
)
_PO_BOX = re.compile(r"\b(?:PO|P\.O\.|private)\s+box\s+\d+\b", re.IGNORECASE)

# --- names ----------------------------------------------------------------------------

_WORD = r"[A-Za-z\u00c0-\u017f][A-Za-z\u00c0-\u017f'\u2019-]*"
_CAP_WORD = r"[A-Z\u0100\u0112\u012a\u014c\u016a][A-Za-z\u00c0-\u017f'\u2019-]+"
_INTRODUCED = re.compile(
    rf"\b(?:my name is|my name's|name is|name:|i am|i'm|im|this is|it's|its|call me|"
    rf"speaking with|you're talking to|i'm called)\s+({_WORD}(?:\s+{_WORD}){{0,2}})",
    re.IGNORECASE,
)
_HERE = re.compile(
    rf"(?:^|[.!?,]\s*|\b(?:hi|hello|kia ora|morena|mōrena)[, ]+)"
    rf"({_CAP_WORD}(?:\s+{_CAP_WORD}){{0,2}})\s+here\b",
    re.IGNORECASE,
)
_SIGNED = re.compile(
    rf"\b(?:kind regards|regards|best regards|warm regards|thanks|thank you|cheers|"
    rf"ngā mihi|nga mihi|ngā mihi nui|nga mihi nui|nāku noa|naku noa|sincerely|yours|"
    rf"many thanks)\s*[,:\-\u2013\u2014]?\s*\n?\s*({_WORD}(?:\s+{_WORD}){{0,2}})\s*[.!]?\s*$",
    re.IGNORECASE,
)
_RELATION = re.compile(
    rf"\b(?:my|our)\s+(?:wife|husband|partner|son|daughter|mum|mom|mother|dad|father|"
    rf"brother|sister|friend|neighbour|neighbor|flatmate|boss|colleague|nan|nana|koro|"
    rf"kuia|whānau member|cousin|uncle|aunt|aunty|grandson|granddaughter|tenant|landlord)"
    rf"(?:'s name is|,)?\s+({_CAP_WORD}(?:\s+{_CAP_WORD})?)"
)
_NAME_LABEL = re.compile(
    rf"\b(?:name|full name|policyholder|policy holder|holder|insured|driver)\s*(?:is|:)\s*"
    rf"({_WORD}(?:\s+{_WORD}){{0,2}})",
    re.IGNORECASE,
)

# Common first names in New Zealand, te reo Māori names among them. A listed
# name is masked wherever it stands, with a capitalised word after it (the
# surname). Names that are also ordinary words (Grace, May, Will) are left
# out: they are found by the cues above instead.
FIRST_NAMES = frozenset(
    """
    aroha hemi mereana rāwiri rawiri wiremu tāne tane ngaire ngāire anahera manaia nikau
    kahurangi tama tamati tamatea hine hinemoa moana rangi te ariki kiri kiri mana māia maia
    awhina whetu wairua mihi pita hohepa hōhepa rewi tipene matiu pania marama huia kauri
    tui tūī ihaia nikora tia kaea ataahua mere miriama rongo rangimarie hana henare
    teina tai koha waimarie rua kora tawhiri tāwhiri rēweti reweti rākau ripeka heeni
    james john william jack oliver noah liam lucas leo george charlie thomas harry henry
    samuel sam daniel david michael matthew andrew peter paul mark luke benjamin ben
    joshua josh ethan jacob logan mason hunter cooper max oscar finn archie arlo theo
    olivia charlotte amelia isla ava mia sophie emily ella harper ruby lily zoe chloe
    grace sarah emma hannah jessica lucy anna kate kath katherine rebecca rachel laura
    megan nicola michelle karen susan helen jennifer julie lisa amanda melissa kylie
    priya raj sanjay anjali arjun wei li mei jun hiroshi yuki sione losa mele tevita
    ana lavinia sefa malia viliami salote siosaia tomasi fatima mohammed ahmed ali
    ravi deepak nikhil kiran aisha zainab omar hamid
    erin chloe ben aroha dev gus fern
    """.split()
)
_AMBIGUOUS_FIRST = frozenset("grace mark will may hope faith joy rose bill jack max".split())

# Words after "I'm", "this is", "from" that are not names.
_NOT_NAMES = frozenset(
    """
    a an the not so very just still really sure trying wondering asking looking hoping going
    calling writing covered insured unsure worried new back here there happy sorry about
    after in on at from with your my our his her their this that it its is was be been
    being having getting making taking doing claiming travelling staying moving waiting
    wanting needing unable able afraid aware confused glad pleased stuck away out off
    home work overseas abroad renting currently also already only now then today
    tomorrow yesterday fine good ok okay well sick ill injured hurt stressed upset angry
    interested keen ready late early due over under the insurer northwind policy claim
    car house contents calling ringing emailing texting regarding re about following
    you them us me him someone anyone everyone nobody hi hello thanks thank please
    motor home and or but if when because as for to of by up down into onto
    told asked wanted made tried paid charged quoted
    """.split()
)

PLACEHOLDERS = {
    "email": "[email]",
    "phone": "[phone]",
    "card": "[number]",
    "bank": "[number]",
    "cvv": "[cvv]",
    "ird": "[ird]",
    "dob": "[date of birth]",
    "licence": "[licence]",
    "plate": "[plate]",
    "address": "[address]",
    "name": "[name]",
}


@dataclass(frozen=True)
class MaskResult:
    text: str
    names: tuple[str, ...]  # the names found (to learn for later messages)


def _sub_group(pattern: re.Pattern[str], label: str, text: str) -> str:
    """Replace only group 1 of each match with ``label``."""

    def one(match: re.Match[str]) -> str:
        start, end = match.span(1)
        offset = match.start()
        whole = match.group(0)
        return whole[: start - offset] + label + whole[end - offset :]

    return pattern.sub(one, text)


def _old_date(match: re.Match[str]) -> str:
    """A full date before 2006 is a date of birth; a recent one is kept."""
    text = match.group(0)
    year = re.search(r"\d{4}", text)
    if year and 1900 <= int(year.group(0)) < 2006:
        return PLACEHOLDERS["dob"]
    return text


def _name_candidates(text: str) -> list[str]:
    found: list[str] = []
    for pattern in (_INTRODUCED, _HERE, _SIGNED, _NAME_LABEL):
        for match in pattern.finditer(text):
            words = []
            for word in match.group(1).split():
                if word.lower().strip("'\u2019-") in _NOT_NAMES or word.startswith("["):
                    break
                words.append(word.strip(",.!?"))
            if words:
                found.append(" ".join(words))
    for match in _RELATION.finditer(text):
        found.append(match.group(1))
    for match in re.finditer(rf"(?<![\w'\u2019-])({_WORD})(?=(?:\s+({_CAP_WORD}))?)", text):
        first = match.group(1)
        key = first.lower()
        if key not in FIRST_NAMES:
            continue
        if key in _AMBIGUOUS_FIRST and not (first[0].isupper() and match.group(2)):
            continue
        if not first[0].isupper() and key not in _MAORI_OR_DISTINCT:
            continue
        surname = match.group(2)
        if surname and surname.lower() in _NOT_NAMES:
            surname = None
        found.append(f"{first} {surname}" if surname else first)
    return found


# Lower-case first names masked too: distinctive enough not to be an ordinary word.
_MAORI_OR_DISTINCT = (
    FIRST_NAMES
    - _AMBIGUOUS_FIRST
    - frozenset(
        "te tia rua tai rongo mana mihi koha kora ana li wei mei jun ben sam dev gus fern"
        " erin tui kauri huia rangi moana marama rākau".split()
    )
)


def _mask_words(text: str, words: Iterable[str]) -> str:
    parts = sorted({w for w in words if len(w) >= 2}, key=len, reverse=True)
    if not parts:
        return text
    pattern = re.compile(
        r"(?<![\w\[])(?:" + "|".join(re.escape(p) for p in parts) + r")(?![\w\]])",
        re.IGNORECASE,
    )
    return pattern.sub(PLACEHOLDERS["name"], text)


def name_digest(word: str, *, key: str) -> str:
    """A keyed digest of one name word, so a conversation can remember it unreadably."""
    normal = word.casefold().strip("'\u2019-.,")
    return hmac.new(key.encode(), normal.encode(), hashlib.sha256).hexdigest()[:24]


def personal_data_scan(
    text: str,
    *,
    names: tuple[str, ...] = (),
    known_digests: frozenset[str] = frozenset(),
    digest_key: str = "",
) -> MaskResult:
    """Mask ``text``; return it with the names found in it (to remember them)."""
    masked = _EMAIL.sub(PLACEHOLDERS["email"], text)
    masked = _PO_BOX.sub(PLACEHOLDERS["address"], masked)
    masked = _ADDRESS.sub(PLACEHOLDERS["address"], masked)
    masked = _sub_group(_DOB, PLACEHOLDERS["dob"], masked)
    masked = _ANY_DATE.sub(_old_date, masked)
    masked = _sub_group(_CVV, PLACEHOLDERS["cvv"], masked)
    masked = _BANK.sub(PLACEHOLDERS["bank"], masked)
    masked = _PHONE.sub(PLACEHOLDERS["phone"], masked)
    masked = _sub_group(_PHONE_CUE, PLACEHOLDERS["phone"], masked)
    masked = _CARD.sub(PLACEHOLDERS["card"], masked)
    masked = _IRD.sub(PLACEHOLDERS["ird"], masked)
    masked = _LICENCE.sub(PLACEHOLDERS["licence"], masked)
    masked = _sub_group(_PLATE_CUE, PLACEHOLDERS["plate"], masked)
    masked = _PLATE.sub(PLACEHOLDERS["plate"], masked)

    found = [*names, *_name_candidates(masked)]
    words = [w.strip(",.!?") for name in found for w in name.split()]
    if known_digests and digest_key:
        words += [
            w for w in re.findall(_WORD, masked) if name_digest(w, key=digest_key) in known_digests
        ]
    masked = _mask_words(masked, words)
    return MaskResult(text=masked, names=tuple(found))


def personal_data_mask(text: str, *, names: tuple[str, ...] = ()) -> str:
    """Replace personal data in ``text`` with labelled placeholders."""
    return personal_data_scan(text, names=names).text
