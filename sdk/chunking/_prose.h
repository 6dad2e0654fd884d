/* Additive positions (_junctions.py's rules) and prose's level scans (_prose.py's
 * patterns), over a text's code points and two tables by code point that the caller
 * filled beforehand (_accel.classified): shared by _kernels.c and _native.c, limited-API
 * calls only, no call into Python. The includer defines SCAN_READ(kind, data, i), and
 * SCAN_OWN_KIND where it reads a kind of text of its own (the loops are made for it).
 *
 * A character whose entry is not filled sets ``missing`` and reads as unknown; the
 * entry points then fail with ValueError instead of guessing. */
#ifndef SEAM_PROSE_H
#define SEAM_PROSE_H

#define CODE_POINTS 0x110000

/* -1, with ValueError set for a character whose entry is not filled (unless an error is
 * set already). */
static int
table_missing(void)
{
    if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError,
                        "a character of the text has no entry in the classes' table: fill the tables for the "
                        "text first (_prose.tables)");
    }
    return -1;
}

/* ---- Additive positions (see _junctions.py, whose rules these mirror exactly) ---- */

enum { NEWLINE, SPACE, LETTER, DIGIT, MARK, APOSTROPHE, SLASH, OTHER, UNKNOWN };
enum { RULE_O200K = 1, RULE_CL100K = 2 };
#define REACH 64

/* A text and its junction classes: a table of 0x110000 bytes, the class + 1 by code
 * point (0: not filled). */
typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
    const unsigned char *table;
    int missing;
} Junction;

static inline int
class_at(Junction *j, Py_ssize_t i)
{
    if (i < 0) {
        i += j->n; /* as Python indexes: the engine never asks before the text's start */
    }
    Py_UCS4 c = SCAN_READ(j->kind, j->data, i);
    unsigned char cls = c < CODE_POINTS ? j->table[c] : 0;
    if (cls == 0 || cls > UNKNOWN + 1) {
        j->missing = 1;
        return UNKNOWN;
    }
    return cls - 1;
}

/* Whether ``p`` (0 < p < n, or 0 with the character before it read as Python reads
 * text[-1]) is additive under ``rule``. */
static int
additive_at(Junction *j, Py_ssize_t p, int rule)
{
    int a = class_at(j, p - 1);
    int b = class_at(j, p);
    if (a == UNKNOWN || b == UNKNOWN) {
        return 0;
    }
    if (rule == RULE_O200K) {
        if (a == NEWLINE) {
            if (b == NEWLINE || b == SLASH) {
                return 0;
            }
            if (b != SPACE) {
                return 1;
            }
            /* Additive unless the whitespace run from p holds a line break. */
            for (Py_ssize_t q = p; q < j->n; q++) {
                int c = class_at(j, q);
                if (c == NEWLINE) {
                    return 0;
                }
                if (c != SPACE) {
                    return 1;
                }
            }
            return 1;
        }
        if (a == SPACE) {
            return 0;
        }
        if (b == SPACE) {
            return 1;
        }
        if (a == LETTER) {
            return b != LETTER && b != MARK && b != APOSTROPHE;
        }
        if (a == DIGIT) {
            return b != DIGIT;
        }
        return 0;
    }
    /* cl100k */
    if (a == NEWLINE) {
        return b != NEWLINE && b != SPACE;
    }
    if (a == SPACE) {
        return 0;
    }
    if (b == SPACE) {
        return 1;
    }
    if (a == LETTER) {
        return b != LETTER;
    }
    if (a == DIGIT) {
        return b != DIGIT;
    }
    return 0;
}

/* The first additive position from ``p`` (inside the text) in the direction of ``step``,
 * within REACH positions and inside the text: -1 for none, -2 when a class is missing. */
static Py_ssize_t
scan_additive(Junction *j, Py_ssize_t p, int rule, int step)
{
    Py_ssize_t n = j->n;
    Py_ssize_t stop = step > 0 ? (p + REACH < n ? p + REACH : n) : (p - REACH > -1 ? p - REACH : -1);
    for (Py_ssize_t q = p; q != stop; q += step) {
        int at = additive_at(j, q, rule);
        if (j->missing) {
            table_missing();
            return -2;
        }
        if (at) {
            return q;
        }
    }
    return -1;
}

/* ---- Prose level scans (see _prose.py, whose patterns these mirror exactly) ---- */

/* Flags of a character, as _prose.prose_flags gives them. */
#define F_STERM 1           /* [\p{Sentence_Terminal}…] */
#define F_CJK_STERM 2       /* [。！？｡︒﹒﹗﹖．] */
#define F_CLOSE 4           /* closing punctuation and quotes */
#define F_HSPACE 8          /* White_Space but for line breaks */
#define F_CJK_CLAUSE 16     /* [、，；：﹐﹑､︐︑] */
#define F_CLAUSE 32         /* [,;:،؛] */
#define F_BAD_AFTER 64      /* may not start a piece, or joins the grapheme before it */
#define F_BAD_BEFORE 128    /* may not end a piece, or joins the grapheme after it */
#define F_XID 256           /* XID_Continue */
#define F_JOINS 512         /* may join a neighbour in a grapheme cluster (_prose._JOINING) */
#define F_JOINS_AFTER 1024  /* joins the grapheme before it */
#define F_JOINS_BEFORE 2048 /* joins the grapheme after it */
#define F_SCRIPT_SHIFT 12   /* 3 bits: the script class, 0 for none */
#define F_ALL 0x7FFF
#define F_KNOWN 0x8000

/* A text and its prose flags: a table of 0x110000 two-byte entries, the flags | F_KNOWN
 * by code point (0: not filled). */
typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
    const uint16_t *flags;
    int missing;
} Scan;

static inline int
flags_at(Scan *s, Py_ssize_t i)
{
    Py_UCS4 c = SCAN_READ(s->kind, s->data, i);
    uint16_t f = c < CODE_POINTS ? s->flags[c] : 0;
    if (!(f & F_KNOWN)) {
        s->missing = 1;
        return 0;
    }
    return f & F_ALL;
}

/* The first position from ``i`` before ``end`` whose character has any of ``mask`` in
 * its flags or is not filled (``end`` if none): the level scans step over the characters
 * that cannot start a cut in one tight loop per width. */
#define SKIP_TO_FLAGS(K)                                                                                               \
    for (; i < end; i++) {                                                                                             \
        Py_UCS4 c = SCAN_READ((K), s->data, i);                                                                        \
        uint16_t f = c < CODE_POINTS ? table[c] : 0;                                                                   \
        if (!(f & F_KNOWN) || (f & mask)) {                                                                            \
            return i;                                                                                                  \
        }                                                                                                              \
    }

/* ``LOOP(K)`` made for each kind of text (a constant K for each, so that each reads its
 * width directly): 1, 2 or 4 bytes a code point, and the includer's own. */
#ifdef SCAN_OWN_KIND
#define OWN_KIND_CASE(LOOP)                                                                                            \
    case SCAN_OWN_KIND:                                                                                                \
        LOOP(SCAN_OWN_KIND);                                                                                           \
        break;
#else
#define OWN_KIND_CASE(LOOP)
#endif
#define BY_KIND(LOOP)                                                                                                  \
    switch (s->kind) {                                                                                                 \
    case 1:                                                                                                            \
        LOOP(1);                                                                                                       \
        break;                                                                                                         \
    case 2:                                                                                                            \
        LOOP(2);                                                                                                       \
        break;                                                                                                         \
    case 4:                                                                                                            \
        LOOP(4);                                                                                                       \
        break;                                                                                                         \
        OWN_KIND_CASE(LOOP)                                                                                            \
    default:                                                                                                           \
        LOOP(s->kind);                                                                                                 \
        break;                                                                                                         \
    }

static Py_ssize_t
skip_to_flags(const Scan *s, Py_ssize_t i, Py_ssize_t end, int mask)
{
    const uint16_t *table = s->flags;
    BY_KIND(SKIP_TO_FLAGS)
    return end;
}

/* The same for the line-break levels: the first CR or LF, else (``paragraph`` false)
 * U+2028 or U+0085, else (``paragraph``) U+2029. */
#define SKIP_TO_BREAK(K)                                                                                               \
    for (; i < end; i++) {                                                                                             \
        Py_UCS4 c = SCAN_READ((K), s->data, i);                                                                        \
        if (c == '\n' || c == '\r' || (paragraph ? c == 0x2029 : (c == 0x2028 || c == 0x85))) {                        \
            return i;                                                                                                  \
        }                                                                                                              \
    }

static Py_ssize_t
skip_to_break(const Scan *s, Py_ssize_t i, Py_ssize_t end, int paragraph)
{
    BY_KIND(SKIP_TO_BREAK)
    return end;
}

static inline int
is_paragraph_nl(Py_UCS4 c)
{
    return c == '\r' || c == '\n';
}

static inline int
is_line_break(Py_UCS4 c)
{
    return c == '\r' || c == '\n' || c == 0x2028 || c == 0x85;
}

/* The end of the run of line breaks from ``i`` (which starts one) with only horizontal
 * space between them, and how many line breaks it holds (a CR LF is one). */
static Py_ssize_t
break_run(Scan *s, Py_ssize_t i, Py_ssize_t end, int (*is_break)(Py_UCS4), Py_ssize_t *count)
{
    Py_ssize_t q = i;
    Py_ssize_t last = i;
    *count = 0;
    while (q < end) {
        Py_UCS4 c = SCAN_READ(s->kind, s->data, q);
        if (is_break(c)) {
            q += c == '\r' && q + 1 < end && SCAN_READ(s->kind, s->data, q + 1) == '\n' ? 2 : 1;
            (*count)++;
            last = q;
            continue;
        }
        if (q == i || !(flags_at(s, q) & F_HSPACE) || s->missing) {
            break;
        }
        q++;
    }
    return last;
}

/* Cuts found: grown as needed; a scan given a ``limit`` (0: none) stops once it holds
 * that many, and says where to go on from. */
typedef struct {
    int64_t *items;
    Py_ssize_t len, cap, limit;
} Cuts;

static int
push(Cuts *out, int64_t value)
{
    if (out->len == out->cap) {
        Py_ssize_t cap = out->cap ? out->cap * 2 : 64;
        int64_t *grown = cap > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(int64_t)
                             ? NULL
                             : PyMem_Realloc(out->items, (size_t)cap * sizeof(int64_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return table_missing();
        }
        out->items = grown;
        out->cap = cap;
    }
    out->items[out->len++] = value;
    return 0;
}

static inline int
full(const Cuts *out)
{
    return out->limit > 0 && out->len >= out->limit;
}

static inline int
allowed_at(Scan *s, Py_ssize_t p)
{
    return !((flags_at(s, p) & F_BAD_AFTER) || (flags_at(s, p - 1) & F_BAD_BEFORE));
}

/* A level's candidate: kept when strictly inside and allowed (nothing after it that may
 * not start a piece or joins the grapheme before, nothing before it that may not end one). */
static int
keep(Scan *s, Cuts *out, Py_ssize_t start, Py_ssize_t end, Py_ssize_t p)
{
    if (p <= start || p >= end) {
        return 0;
    }
    int allowed = allowed_at(s, p);
    if (s->missing) {
        return table_missing();
    }
    return allowed ? push(out, p) : 0;
}

/* A run of characters with any of ``mask`` from ``i``, stopping at ``end``. */
static Py_ssize_t
run_of(Scan *s, Py_ssize_t i, Py_ssize_t end, int mask)
{
    while (i < end && (flags_at(s, i) & mask) && !s->missing) {
        i++;
    }
    return i;
}

/* Candidate cuts of one level in [start, end), in order, from ``*pos`` (``start`` at
 * first): the positions the pattern of that level cuts at, as finditer over text[:end]
 * from ``start`` finds them. Stops when ``out`` is full, with ``*pos`` where to go on
 * from (``end`` when done). -1 on an error (a missing flag: ``s->missing``). */
static int
level_candidates(Scan *s, Py_ssize_t start, Py_ssize_t end, int level, Cuts *out, Py_ssize_t *pos)
{
    Py_ssize_t i = *pos;
    while (i < end && !s->missing && !full(out)) {
        switch (level) {
        case 0:
        case 1:
            i = skip_to_break(s, i, end, level == 0);
            break;
        case 2:
            i = skip_to_flags(s, i, end, F_STERM);
            break;
        case 3:
            i = skip_to_flags(s, i, end, F_CJK_CLAUSE | F_CLAUSE);
            break;
        case 4:
            i = skip_to_flags(s, i, end, F_HSPACE);
            break;
        default:
            break;
        }
        if (i >= end) {
            break;
        }
        Py_UCS4 c = SCAN_READ(s->kind, s->data, i);
        switch (level) {
        case 0: { /* (?>\r\n|\r|\n)(?:H*(?>\r\n|\r|\n))+|\u2029+ : two line breaks or more */
            if (is_paragraph_nl(c)) {
                Py_ssize_t count;
                Py_ssize_t stop = break_run(s, i, end, is_paragraph_nl, &count);
                if (count >= 2) {
                    if (keep(s, out, start, end, stop) < 0) {
                        return table_missing();
                    }
                    i = stop;
                    continue;
                }
            }
            else if (c == 0x2029) {
                Py_ssize_t stop = i + 1;
                while (stop < end && SCAN_READ(s->kind, s->data, stop) == 0x2029) {
                    stop++;
                }
                if (keep(s, out, start, end, stop) < 0) {
                    return table_missing();
                }
                i = stop;
                continue;
            }
            i++;
            break;
        }
        case 1: { /* (?:\r\n|\r|\n|\u2028|\x85)(?:H*(?:...))* */
            if (is_line_break(c)) {
                Py_ssize_t count;
                Py_ssize_t stop = break_run(s, i, end, is_line_break, &count);
                if (keep(s, out, start, end, stop) < 0) {
                    return table_missing();
                }
                i = stop;
                continue;
            }
            i++;
            break;
        }
        case 2: { /* sentence ends (see _prose._SENTENCE) */
            int f = flags_at(s, i);
            if (!(f & F_STERM)) {
                i++;
                break;
            }
            if (f & F_CJK_STERM) {
                Py_ssize_t stop = run_of(s, run_of(s, i, end, F_CJK_STERM), end, F_CLOSE);
                if (keep(s, out, start, end, stop) < 0) {
                    return table_missing();
                }
                i = stop;
                continue;
            }
            Py_ssize_t stop = run_of(s, run_of(s, i, end, F_STERM), end, F_CLOSE);
            if (stop < end && (flags_at(s, stop) & F_HSPACE)) {
                if (keep(s, out, start, end, stop) < 0) {
                    return table_missing();
                }
                i = stop;
                continue;
            }
            /* the skip run: terminals but the CJK ones, taken whole */
            Py_ssize_t q = i;
            while (q < end && !s->missing) {
                int g = flags_at(s, q);
                if (!((g & F_STERM) && !(g & F_CJK_STERM))) {
                    break;
                }
                q++;
            }
            i = q;
            break;
        }
        case 3: { /* clause marks (see _prose._CLAUSE) */
            int f = flags_at(s, i);
            if (f & F_CJK_CLAUSE) {
                Py_ssize_t stop = run_of(s, run_of(s, i, end, F_CJK_CLAUSE), end, F_CLOSE);
                if (keep(s, out, start, end, stop) < 0) {
                    return table_missing();
                }
                i = stop;
                continue;
            }
            if (f & F_CLAUSE) {
                Py_ssize_t marks = run_of(s, i, end, F_CLAUSE);
                Py_ssize_t stop = run_of(s, marks, end, F_CLOSE);
                if (stop < end && (flags_at(s, stop) & F_HSPACE)) {
                    if (keep(s, out, start, end, stop) < 0) {
                        return table_missing();
                    }
                    i = stop;
                }
                else {
                    i = marks; /* the skip run */
                }
                continue;
            }
            i++;
            break;
        }
        case 4: { /* H+ : a cut before each run of horizontal space */
            if (flags_at(s, i) & F_HSPACE) {
                if (keep(s, out, start, end, i) < 0) {
                    return table_missing();
                }
                i = run_of(s, i, end, F_HSPACE);
                continue;
            }
            i++;
            break;
        }
        default:
            PyErr_Format(PyExc_ValueError, "no native scan for level %d", level);
            return table_missing();
        }
    }
    *pos = i < end ? i : end;
    return s->missing ? table_missing() : 0;
}

#ifndef SEAM_PROSE_LEVELS_ONLY

#define KINSOKU_RUN_MAX 32
#define IDENT_RUN_MAX 65536
#define HAN_KANA 1
#define HIRAGANA 2

/* Whether a character of [start, end) may join a neighbour in a grapheme cluster (the
 * fine levels then leave the range to the grapheme stepping); -1 on a missing flag. */
static int
any_joins(Scan *s, Py_ssize_t start, Py_ssize_t end)
{
    for (Py_ssize_t p = start; p < end; p++) {
        int f = flags_at(s, p);
        if (s->missing) {
            return table_missing();
        }
        if (f & F_JOINS) {
            return 1;
        }
    }
    return 0;
}

/* Where the fine levels stand: the level, the position to go on from, the last script
 * class (levels 6 and 7) or the graphemes glued since the last cut (level 8), and
 * whether this level has given a cut yet. */
typedef struct {
    int level;
    Py_ssize_t pos;
    long aux;
    int found;
} Fine;

/* The first level from ``f->level`` (5 identifier, 6 script, 7 weak script, 8 grapheme)
 * with allowed cuts in (start, end), where each character is a grapheme cluster of its
 * own; ``f->level`` 9 when none has any. Stops when ``out`` is full, ``f`` saying where
 * to go on from (``f->pos`` is ``end`` when done). -1 on an error. */
static int
fine_levels(Scan *s, Py_ssize_t start, Py_ssize_t end, Fine *f, Cuts *out)
{
    while (f->level <= 8) {
        Py_ssize_t p = f->pos;
        long aux = f->aux;
        if (f->level == 5) {
            /* Starts of identifier runs (at most IDENT_RUN_MAX characters) and of
             * every other character. */
            while (p < end) {
                if (full(out)) {
                    f->pos = p;
                    f->aux = aux;
                    return 0;
                }
                Py_ssize_t q = p + 1;
                if (flags_at(s, p) & F_XID) {
                    Py_ssize_t limit = end - p > IDENT_RUN_MAX ? p + IDENT_RUN_MAX : end;
                    while (q < limit && (flags_at(s, q) & F_XID)) {
                        q++;
                    }
                }
                if (s->missing) {
                    return table_missing();
                }
                if (p > start && allowed_at(s, p)) {
                    if (push(out, p) < 0) {
                        return table_missing();
                    }
                    f->found = 1;
                }
                p = q;
            }
        }
        else if (f->level <= 7) {
            /* Script changes between characters with a class: strong ones (any two
             * classes but kanji/katakana to hiragana) at 6, weak ones (that one) at 7. */
            int weak = f->level == 7;
            for (; p < end; p++) {
                if (full(out)) {
                    f->pos = p;
                    f->aux = aux;
                    return 0;
                }
                int cls = (flags_at(s, p) >> F_SCRIPT_SHIFT) & 7;
                if (s->missing) {
                    return table_missing();
                }
                if (cls == 0) {
                    continue;
                }
                if (aux != 0 && aux != cls) {
                    int is_weak = aux == HAN_KANA && cls == HIRAGANA;
                    if (is_weak == weak && allowed_at(s, p)) {
                        if (push(out, p) < 0) {
                            return table_missing();
                        }
                        f->found = 1;
                    }
                }
                aux = cls;
            }
        }
        else {
            /* Every position, but where kinsoku refuses it, until KINSOKU_RUN_MAX
             * graphemes are glued (never inside a grapheme cluster). */
            if (p <= start) {
                p = start + 1;
                aux = 1;
            }
            for (; p < end; p++) {
                if (full(out)) {
                    f->pos = p;
                    f->aux = aux;
                    return 0;
                }
                int allowed = allowed_at(s, p);
                int unsafe = (flags_at(s, p) & F_JOINS_AFTER) || (flags_at(s, p - 1) & F_JOINS_BEFORE);
                if (s->missing) {
                    return table_missing();
                }
                if (allowed || (!unsafe && aux >= KINSOKU_RUN_MAX)) {
                    if (push(out, p) < 0) {
                        return table_missing();
                    }
                    f->found = 1;
                    aux = 1;
                }
                else {
                    aux++;
                }
            }
        }
        if (s->missing) {
            return table_missing();
        }
        f->pos = end;
        f->aux = aux;
        if (f->found) {
            return 0;
        }
        f->level++;
        f->pos = start;
        f->aux = 0;
    }
    f->pos = end;
    return 0;
}

#endif /* SEAM_PROSE_LEVELS_ONLY */

#endif
