/* A guard around tree-sitter grammars' external scanners (optional, like _native).
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
 * state too big to keep, and the token is re-lexed from an empty state. Only such
 * states change; every other parse is the grammar's own.
 *
 * The copy is made of the language structure of ABI 14 and 15 (the versions this
 * tree-sitter loads); a language of another version, or one without an external
 * scanner, comes back as it is.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define BUFFER_SIZE 1024 /* TREE_SITTER_SERIALIZATION_BUFFER_SIZE */
#define SCRATCH_SIZE (8 * BUFFER_SIZE)
#define CAPSULE "tree_sitter.Language"

typedef void (*function)(void);
typedef unsigned (*serialize_fn)(void *, char *);

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
    function lex_fn;
    function keyword_lex_fn;
    uint16_t keyword_capture_token;
    struct {
        const void *states;
        const void *symbol_map;
        function create;
        function destroy;
        function scan;
        serialize_fn serialize;
        function deserialize;
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
    serialize_fn serialize;
    int ruby;
    Language15 copy;
} Slot;

/* One slot per guarded language; serialize has no argument saying which language it
 * serves, so each slot has a function of its own. */
#define SLOTS 32
static Slot slots[SLOTS];
static int used;
static unsigned long long dropped; /* states dropped, for tests (not thread-exact) */
static unsigned largest;           /* the largest state a guarded scanner wrote */

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

#define SLOT(i) \
    static unsigned serialize_##i(void *payload, char *buffer) { return guarded(&slots[i], payload, buffer); }
SLOT(0) SLOT(1) SLOT(2) SLOT(3) SLOT(4) SLOT(5) SLOT(6) SLOT(7)
SLOT(8) SLOT(9) SLOT(10) SLOT(11) SLOT(12) SLOT(13) SLOT(14) SLOT(15)
SLOT(16) SLOT(17) SLOT(18) SLOT(19) SLOT(20) SLOT(21) SLOT(22) SLOT(23)
SLOT(24) SLOT(25) SLOT(26) SLOT(27) SLOT(28) SLOT(29) SLOT(30) SLOT(31)

static const serialize_fn wrappers[SLOTS] = {
    serialize_0, serialize_1, serialize_2, serialize_3, serialize_4, serialize_5, serialize_6,
    serialize_7, serialize_8, serialize_9, serialize_10, serialize_11, serialize_12, serialize_13,
    serialize_14, serialize_15, serialize_16, serialize_17, serialize_18, serialize_19, serialize_20,
    serialize_21, serialize_22, serialize_23, serialize_24, serialize_25, serialize_26, serialize_27,
    serialize_28, serialize_29, serialize_30, serialize_31,
};

PyDoc_STRVAR(guard_doc,
             "guard(language, check) -> language\n\n"
             "A copy of ``language`` (a tree-sitter language capsule) whose external scanner's\n"
             "serialize cannot write past tree-sitter's buffer; ``check`` 'ruby' also drops states\n"
             "Ruby's scanner would read back wrong. Other languages come back unchanged.");

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
    if ((source->version != 14 && source->version != 15) || source->external_scanner.serialize == NULL) {
        Py_INCREF(capsule);
        return capsule;
    }
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
        slot->serialize = source->external_scanner.serialize;
        slot->ruby = strcmp(check, "ruby") == 0;
        slot->copy.base.external_scanner.serialize = wrappers[used];
        found = used++;
    }
    return PyCapsule_New(&slots[found].copy, CAPSULE, NULL);
}

PyDoc_STRVAR(stats_doc, "stats() -> (dropped, largest)\n\n"
                        "States dropped so far, and the largest state a guarded scanner wrote.");

static PyObject *
stats(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("(KI)", dropped, largest);
}

static PyMethodDef guard_methods[] = {
    {"guard", guard, METH_VARARGS, guard_doc},
    {"stats", stats, METH_NOARGS, stats_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef guard_module = {
    PyModuleDef_HEAD_INIT,
    "sdk.chunking._guard",
    "A guard around tree-sitter grammars' external scanners (see _guard.c).",
    0,
    guard_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__guard(void)
{
    return PyModule_Create(&guard_module);
}
