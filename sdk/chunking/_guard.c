/* A guard around tree-sitter grammars' lexers and external scanners (optional, like
 * _native). It meters the lexer's steps (see Meter below), and it keeps a scanner's
 * state within tree-sitter's buffer:
 *
 * tree-sitter asks a grammar's external scanner to serialize its state into a buffer of
 * TREE_SITTER_SERIALIZATION_BUFFER_SIZE (1024) bytes, which sits just before the
 * parser's stack pointer. A scanner that writes past it corrupts that pointer and the
 * process crashes. tree-sitter-ruby 0.23.1 does so on crafted text: its bound check
 * for a heredoc is two bytes short, so a state of open heredocs and literals that just
 * fits writes one byte too many. It also stores a heredoc word's length in one byte,
 * so a word of 256 bytes or more is read back as a shorter one followed by garbage.
 *
 * guard(language, check) returns a copy of the language whose serialize writes into a
 * larger buffer of its own and hands tree-sitter only a state that fits in 1024 bytes
 * (and, with check "ruby", one that Ruby's scanner will read back byte for byte). A
 * state that does not is dropped: serialize returns 0, as scanners do themselves for a
 * state too big to keep, and the token is re-lexed from an empty state.
 *
 * The copy also gives the scanner a new instance where tree-sitter restores an empty
 * state (a scanner as new, by tree-sitter's contract): tree-sitter-bash 0.25 only
 * resets the heredocs it holds, keeps them all, and walks them on every reset, so
 * heredocs piling up took quadratic time (see renewed). Its own reset also keeps a
 * glob's paren depth and two quoting flags, which a new instance clears: on malformed
 * bash (an unclosed heredoc after an extended glob, about 1 in 4,000 generated
 * snippets) the tree can differ from the unguarded one; on 26,000 real files in the
 * 13 grammars, every tree is the grammar's own.
 *
 * The copy also gives a scanner character classes for every code point (glibc only):
 * a scanner that asks isdigit() or isalpha() of a lookahead past 255, as
 * tree-sitter-bash 0.25's does after "{", made glibc read its class table up to 2 MB
 * past its end, and "{" followed by a far code point crashed the process about one run
 * in two. While a scanner runs, the thread's table is one that covers every code point,
 * its first 384 entries copied from the table in use when the first language was
 * guarded, and no class for the rest (their classes were whatever lay past the table).
 *
 * The copy is made of the language structure of ABI 14 and 15 (the versions this
 * tree-sitter loads); a language of another version, or one without an external
 * scanner, comes back as it is.
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000 /* abi3: only capsules, ints and argument parsing */
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GLIBC__)
#include <ctype.h>
#define WIDE_CTYPE 1
#endif

#define BUFFER_SIZE 1024 /* TREE_SITTER_SERIALIZATION_BUFFER_SIZE */
#define SCRATCH_SIZE (8 * BUFFER_SIZE)
#define CAPSULE "tree_sitter.Language"

typedef void (*function)(void);
typedef bool (*lex_fn_t)(void *, uint16_t);
typedef unsigned (*serialize_fn)(void *, char *);
typedef bool (*scan_fn)(void *, void *, const bool *);
typedef void (*deserialize_fn)(void *, const char *, unsigned);

/* struct TSLanguage of ABI 14, then the fields ABI 15 adds (from tree_sitter/parser.h);
 * pointers to tables are opaque here, function pointers keep their types' sizes. */
typedef struct {
    uint32_t version;
    uint32_t symbol_count;
    uint32_t alias_count;
    uint32_t token_count;
    uint32_t external_token_count;
    uint32_t state_count;
    uint32_t large_state_count;
    uint32_t production_id_count;
    uint32_t field_count;
    uint16_t max_alias_sequence_length;
    const void *parse_table;
    const void *small_parse_table;
    const void *small_parse_table_map;
    const void *parse_actions;
    const void *symbol_names;
    const void *field_names;
    const void *field_map_slices;
    const void *field_map_entries;
    const void *symbol_metadata;
    const void *public_symbol_map;
    const void *alias_map;
    const void *alias_sequences;
    const void *lex_modes;
    lex_fn_t lex_fn;
    lex_fn_t keyword_lex_fn;
    uint16_t keyword_capture_token;
    struct {
        const void *states;
        const void *symbol_map;
        void *(*create)(void);
        void (*destroy)(void *);
        scan_fn scan;
        serialize_fn serialize;
        deserialize_fn deserialize;
    } external_scanner;
    const void *primary_state_ids;
} Language14;

typedef struct {
    Language14 base;
    const char *name;
    const void *reserved_words;
    uint16_t max_reserved_word_set_size;
    uint32_t supertype_count;
    const void *supertype_symbols;
    const void *supertype_map_slices;
    const void *supertype_map_entries;
    struct {
        uint8_t major_version;
        uint8_t minor_version;
        uint8_t patch_version;
    } metadata;
} Language15;

typedef struct {
    const void *source; /* the grammar's own language */
    lex_fn_t lex;
    lex_fn_t keyword_lex;
    void *(*create)(void);
    void (*destroy)(void *);
    scan_fn scan;
    serialize_fn serialize;
    deserialize_fn deserialize;
    int ruby;
    Language15 copy;
} Slot;

/* The scanner tree-sitter holds is a box around the grammar's own, so that an empty
 * state can be given a new one (see renewed). */
typedef struct {
    void *inner;
} Box;

/* One slot per guarded language; the scanner's functions have no argument saying which
 * language they serve, so each slot has functions of its own. */
#define SLOTS 32
static Slot slots[SLOTS];
static int used;
static unsigned long long dropped; /* states dropped, for tests (not thread-exact) */
static unsigned largest;           /* the largest state a guarded scanner wrote */
static unsigned long long renewals; /* scanners made new for an empty state */

/* Does ``state`` read back as tree-sitter-ruby's deserialize reads it: a count of
 * literals of 5 bytes each, a count of heredocs, then per heredoc 3 flags, a length
 * byte and that many bytes, ending exactly at ``size``? */
static int
ruby_state_reads_back(const unsigned char *state, unsigned size)
{
    if (size == 0)
        return 1;
    size_t at = 1 + 5 * (size_t)state[0];
    if (at >= size)
        return 0;
    unsigned heredocs = state[at++];
    for (unsigned i = 0; i < heredocs; i++) {
        at += 3;
        if (at >= size)
            return 0;
        at += 1 + (size_t)state[at];
        if (at > size)
            return 0;
    }
    return at == size;
}

static unsigned
guarded(Slot *slot, void *payload, char *buffer)
{
    char scratch[SCRATCH_SIZE];
    unsigned size = slot->serialize(payload, scratch);
    if (size > largest)
        largest = size;
    if (size > BUFFER_SIZE || (slot->ruby && !ruby_state_reads_back((const unsigned char *)scratch, size))) {
        dropped++;
        return 0;
    }
    memcpy(buffer, scratch, size);
    return size;
}

static void *
boxed(Slot *slot)
{
    Box *box = malloc(sizeof *box);
    if (box == NULL)
        abort(); /* as tree-sitter's own allocator does */
    box->inner = slot->create();
    return box;
}

static void
unboxed(Slot *slot, void *payload)
{
    Box *box = payload;
    if (box->inner != NULL) /* tree-sitter destroys no scanner its create left NULL */
        slot->destroy(box->inner);
    free(box);
}

/* tree-sitter deserializes an empty state to mean a scanner as new. Some scanners only
 * reset what they hold: tree-sitter-bash 0.25 keeps every heredoc it has seen and
 * walks them all on each reset, so a line of many heredocs took quadratic time (128 KB
 * of "a <<EOF b " took 6 s, 1 MB would take minutes). An empty state gets a new
 * scanner instead. */
static void
renewed(Slot *slot, void *payload, const char *buffer, unsigned length)
{
    Box *box = payload;
    if (length == 0) {
        renewals++;
        if (box->inner != NULL)
            slot->destroy(box->inner);
        box->inner = slot->create();
    }
    slot->deserialize(box->inner, buffer, length);
}

/* The lexer's work, metered per thread while a parse asks for it (meter_start): every
 * step a lex function or an external scanner takes through TSLexer.advance is counted.
 * Some grammars lex in time that grows with the square of the input (an unclosed raw
 * string, comment or literal is scanned to the end again at every token: 32 KB of
 * r#" took 1.2 s in Rust, of %( 3.2 s in Ruby, of ) 4.1 s in bash, with few parser
 * operations); the parse's progress callback reads the count (meter_count) and stops
 * the parse past a bound proportional to the source's length.
 *
 * TSLexer's first fields (tree_sitter/parser.h): a lex function and a scanner get the
 * lexer and call its advance; the guard puts its own advance in for the call and
 * restores the runtime's after it. */
typedef struct {
    int32_t lookahead;
    uint16_t result_symbol;
    void (*advance)(void *, bool);
    void (*mark_end)(void *);
    uint32_t (*get_column)(void *);
    bool (*is_at_included_range_start)(const void *);
    bool (*eof)(const void *);
} Lexer;

typedef struct {
    int active;
    unsigned long long count; /* the lexer's steps */
    unsigned long long steps; /* past this many, lex functions and scanners find nothing */
    void (*advance)(void *, bool);
} Meter;

/* Read at every step of the lexer: in the initial-exec model (an offset from the thread
 * pointer), not through __tls_get_addr, which took 1% of a code chunking pass. A
 * loader without static TLS room left fails to import the module, and chunking goes
 * on without the guard (see _accel). */
#if defined(__GNUC__) && defined(__ELF__)
#define TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define TLS_MODEL
#endif
static _Thread_local Meter meter TLS_MODEL;

static int
exhausted(void)
{
    return meter.count > meter.steps;
}

static void
metered_advance(void *lexer, bool skip)
{
    meter.count++;
    meter.advance(lexer, skip);
}

/* Once past its bounds, a lex function or scanner finds no token without looking:
 * tree-sitter then skips the rest a character at a time, as it skips what no token
 * matches (some lex loops make no parser operation, so the progress callback is not
 * called to stop them). At the end of the input the main lex function finds the end
 * (symbol 0, ts_builtin_sym_end, as a generated lexer accepts it): finding nothing
 * there, tree-sitter's error recovery pushed an empty error token at the last byte
 * again and again, and the parse never ended unless its progress callback stopped it
 * (with memory growing by hundreds of MB a second). */
static bool
at_end(Lexer *lx)
{
    if (!lx->eof(lx))
        return false;
    lx->result_symbol = 0;
    lx->mark_end(lx);
    return true;
}

/* Character classes for every code point while a scanner runs (see the top). */
#ifdef WIDE_CTYPE
#define WIDE_LOW 128 /* glibc's table starts at -128 */
#define WIDE_SPAN (WIDE_LOW + 0x110000 + 1)
static unsigned short *wide_table; /* entries for -128 .. 0x110000; NULL until made */

/* Made once, with the GIL held, when the first language is guarded. Calloc'd: the
 * pages past the copied entries are never written, so they take no memory. */
static void
wide_make(void)
{
    if (wide_table != NULL)
        return;
    unsigned short *t = calloc(WIDE_SPAN, sizeof *t);
    if (t == NULL)
        return; /* scanners then run with the thread's own table */
    memcpy(t, *__ctype_b_loc() - WIDE_LOW, (WIDE_LOW + 256) * sizeof *t);
    wide_table = t;
}

static inline const unsigned short *
wide_enter(void)
{
    const unsigned short **loc = __ctype_b_loc();
    const unsigned short *own = *loc;
    if (wide_table != NULL)
        *loc = wide_table + WIDE_LOW;
    return own;
}

static inline void
wide_leave(const unsigned short *own)
{
    *__ctype_b_loc() = own;
}
#else
static void wide_make(void) {}
static inline const unsigned short *wide_enter(void) { return NULL; }
static inline void wide_leave(const unsigned short *own) { (void)own; }
#endif

#define METERED(call, lexer, main)                                                             \
    do {                                                                                       \
        Lexer *lx = (Lexer *)(lexer);                                                          \
        if (!meter.active || lx->advance == metered_advance)                                   \
            return call;                                                                       \
        if (exhausted())                                                                       \
            return (main) && at_end(lx);                                                       \
        void (*own)(void *, bool) = lx->advance;                                               \
        meter.advance = own;                                                                   \
        lx->advance = metered_advance;                                                         \
        bool result = call;                                                                    \
        lx->advance = own;                                                                     \
        return result;                                                                         \
    } while (0)

#define SLOT(i)                                                                                \
    static bool lex_##i(void *lexer, uint16_t state) { METERED(slots[i].lex(lexer, state), lexer, true); } \
    static bool keyword_lex_##i(void *lexer, uint16_t state)                                   \
    {                                                                                          \
        METERED(slots[i].keyword_lex(lexer, state), lexer, false);                             \
    }                                                                                          \
    static void *create_##i(void) { return boxed(&slots[i]); }                                 \
    static void destroy_##i(void *payload) { unboxed(&slots[i], payload); }                    \
    static bool metered_scan_##i(void *payload, void *lexer, const bool *valid)                \
    {                                                                                          \
        METERED(slots[i].scan(((Box *)payload)->inner, lexer, valid), lexer, false);           \
    }                                                                                          \
    static bool scan_##i(void *payload, void *lexer, const bool *valid)                        \
    {                                                                                          \
        const unsigned short *own = wide_enter();                                              \
        bool result = metered_scan_##i(payload, lexer, valid);                                 \
        wide_leave(own);                                                                       \
        return result;                                                                         \
    }                                                                                          \
    static unsigned serialize_##i(void *payload, char *buffer)                                 \
    {                                                                                          \
        return guarded(&slots[i], ((Box *)payload)->inner, buffer);                            \
    }                                                                                          \
    static void deserialize_##i(void *payload, const char *buffer, unsigned length)            \
    {                                                                                          \
        renewed(&slots[i], payload, buffer, length);                                           \
    }
SLOT(0) SLOT(1) SLOT(2) SLOT(3) SLOT(4) SLOT(5) SLOT(6) SLOT(7)
SLOT(8) SLOT(9) SLOT(10) SLOT(11) SLOT(12) SLOT(13) SLOT(14) SLOT(15)
SLOT(16) SLOT(17) SLOT(18) SLOT(19) SLOT(20) SLOT(21) SLOT(22) SLOT(23)
SLOT(24) SLOT(25) SLOT(26) SLOT(27) SLOT(28) SLOT(29) SLOT(30) SLOT(31)

#define FUNCTIONS(i) {lex_##i, keyword_lex_##i, create_##i, destroy_##i, scan_##i, serialize_##i, deserialize_##i}
static const struct {
    lex_fn_t lex;
    lex_fn_t keyword_lex;
    void *(*create)(void);
    void (*destroy)(void *);
    scan_fn scan;
    serialize_fn serialize;
    deserialize_fn deserialize;
} functions[SLOTS] = {
    FUNCTIONS(0), FUNCTIONS(1), FUNCTIONS(2), FUNCTIONS(3), FUNCTIONS(4), FUNCTIONS(5),
    FUNCTIONS(6), FUNCTIONS(7), FUNCTIONS(8), FUNCTIONS(9), FUNCTIONS(10), FUNCTIONS(11),
    FUNCTIONS(12), FUNCTIONS(13), FUNCTIONS(14), FUNCTIONS(15), FUNCTIONS(16), FUNCTIONS(17),
    FUNCTIONS(18), FUNCTIONS(19), FUNCTIONS(20), FUNCTIONS(21), FUNCTIONS(22), FUNCTIONS(23),
    FUNCTIONS(24), FUNCTIONS(25), FUNCTIONS(26), FUNCTIONS(27), FUNCTIONS(28), FUNCTIONS(29),
    FUNCTIONS(30), FUNCTIONS(31),
};

PyDoc_STRVAR(guard_doc,
             "guard(language, check) -> language\n\n"
             "A copy of ``language`` (a tree-sitter language capsule) whose lexer is metered and\n"
             "whose external scanner's serialize cannot write past tree-sitter's buffer; ``check``\n"
             "'ruby' also drops states Ruby's scanner would read back wrong. A language of another\n"
             "ABI comes back unchanged.");

static PyObject *
guard(PyObject *self, PyObject *args)
{
    PyObject *capsule;
    const char *check;
    if (!PyArg_ParseTuple(args, "Os:guard", &capsule, &check))
        return NULL;
    const Language14 *source = PyCapsule_GetPointer(capsule, CAPSULE);
    if (source == NULL)
        return NULL;
    wide_make();
    if ((source->version != 14 && source->version != 15) || source->lex_fn == NULL) {
        Py_INCREF(capsule);
        return capsule;
    }
    int scanner = source->external_scanner.create != NULL && source->external_scanner.destroy != NULL &&
                  source->external_scanner.scan != NULL && source->external_scanner.serialize != NULL &&
                  source->external_scanner.deserialize != NULL;
    int found = -1;
    for (int i = 0; i < used; i++) {
        if (slots[i].source == source)
            found = i;
    }
    if (found < 0) {
        if (used == SLOTS) {
            Py_INCREF(capsule);
            return capsule;
        }
        Slot *slot = &slots[used];
        memset(slot, 0, sizeof *slot);
        memcpy(&slot->copy, source, source->version == 15 ? sizeof(Language15) : sizeof(Language14));
        slot->source = source;
        slot->lex = source->lex_fn;
        slot->copy.base.lex_fn = functions[used].lex;
        if (source->keyword_lex_fn != NULL) {
            slot->keyword_lex = source->keyword_lex_fn;
            slot->copy.base.keyword_lex_fn = functions[used].keyword_lex;
        }
        if (scanner) {
            slot->create = source->external_scanner.create;
            slot->destroy = source->external_scanner.destroy;
            slot->scan = source->external_scanner.scan;
            slot->serialize = source->external_scanner.serialize;
            slot->deserialize = source->external_scanner.deserialize;
            slot->ruby = strcmp(check, "ruby") == 0;
            slot->copy.base.external_scanner.create = functions[used].create;
            slot->copy.base.external_scanner.destroy = functions[used].destroy;
            slot->copy.base.external_scanner.scan = functions[used].scan;
            slot->copy.base.external_scanner.serialize = functions[used].serialize;
            slot->copy.base.external_scanner.deserialize = functions[used].deserialize;
        }
        found = used++;
    }
    return PyCapsule_New(&slots[found].copy, CAPSULE, NULL);
}

PyDoc_STRVAR(stats_doc, "stats() -> (dropped, largest, renewals)\n\n"
                        "States dropped so far, the largest state a guarded scanner wrote, and\n"
                        "the scanners made new for an empty state (for tests; not thread-exact).");

static PyObject *
stats(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("(KIK)", dropped, largest, renewals);
}

PyDoc_STRVAR(meter_start_doc,
             "meter_start(steps)\n\n"
             "Count the lexer's steps in this thread, from 0; past ``steps``, lex functions and\n"
             "scanners find nothing.");

static PyObject *
meter_start(PyObject *self, PyObject *args)
{
    unsigned long long steps;
    if (!PyArg_ParseTuple(args, "K:meter_start", &steps))
        return NULL;
    meter.active = 1;
    meter.count = 0;
    meter.steps = steps;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(meter_count_doc, "meter_count() -> int\n\nThe lexer's steps in this thread since meter_start().");

static PyObject *
meter_count(PyObject *self, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(meter.count);
}

PyDoc_STRVAR(meter_stop_doc, "meter_stop() -> int\n\nStop counting; the lexer's steps counted.");

static PyObject *
meter_stop(PyObject *self, PyObject *unused)
{
    meter.active = 0;
    return PyLong_FromUnsignedLongLong(meter.count);
}

static PyMethodDef guard_methods[] = {
    {"guard", guard, METH_VARARGS, guard_doc},
    {"stats", stats, METH_NOARGS, stats_doc},
    {"meter_start", meter_start, METH_VARARGS, meter_start_doc},
    {"meter_count", meter_count, METH_NOARGS, meter_count_doc},
    {"meter_stop", meter_stop, METH_NOARGS, meter_stop_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot guard_slots[] = {
    {0, NULL},
};

static struct PyModuleDef guard_module = {
    PyModuleDef_HEAD_INIT,
    "sdk.chunking._guard",
    "A guard around tree-sitter grammars' lexers and external scanners (see _guard.c).",
    0,
    guard_methods,
    guard_slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__guard(void)
{
    return PyModuleDef_Init(&guard_module);
}
