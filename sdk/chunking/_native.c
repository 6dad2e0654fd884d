/* The chunking engine's passes that still read Python objects (optional: sdk.chunking
 * falls back to Python when this module is not built, with the same results): the
 * packing loop (pack) and the JSON splitter's walk. Being
 * retired into Python and the kernels (docs/design.md, "One engine, not two"); the scans
 * it shares with the kernels are one source, _scan.h and _prose.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define SCAN_READ(kind, data, i) PyUnicode_READ(kind, data, i)
#include "_scan.h"
#define SEAM_PROSE_LEVELS_ONLY /* the fine levels are the kernels' alone */
#include "_prose.h"

/* A Section's items (a named tuple of nine). */
#define SECTION_START 0
#define SECTION_END 1
#define SECTION_SPLITTER 2
#define SECTION_STATE 3
#define SECTION_KIND 4
#define SECTION_LANGUAGE 5
#define SECTION_PATH 6
#define SECTION_PARTIAL 7
#define SECTION_STICKY 8
#define SECTION_ITEMS 9
#define SECTION_FIELDS SECTION_ITEMS

/* getattr(obj, name, None) without making an AttributeError: 1 and a new reference
 * in *found, 0 and NULL when there is no such attribute, -1 on an error. */
static int
optional_attr(PyObject *obj, PyObject *name, PyObject **found)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(obj, name, found);
#else
    return _PyObject_LookupAttr(obj, name, found);
#endif
}

/* An int attribute of ``obj`` (a node's offsets, a chunk's fields). */
static int
get_ssize(PyObject *obj, PyObject *name, Py_ssize_t *value)
{
    PyObject *got = PyObject_GetAttr(obj, name);
    if (got == NULL) {
        return -1;
    }
    *value = PyLong_AsSsize_t(got);
    Py_DECREF(got);
    return *value == -1 && PyErr_Occurred() ? -1 : 0;
}


/* Containers spanning fewer characters are not recorded: matching one again scans at
 * most this many, a bounded number of times (by its parent's children, then its own),
 * and a dict entry with its two ints takes about 100 bytes (a JSON document of small
 * objects kept 1.4 bytes of closes per byte of input). */
#define RECORD_MIN 256
/* Nor are containers this many levels below the one matched, or more: past
 * _json._FLAT_DEPTH (64) levels, containers are cut by a scan that needs no closes, and
 * ``[`` nested a million deep kept 48 bytes of closes per byte. */
#define RECORD_DEPTH 65

/* The offset of the bracket closing the container at ``start``, every container of at
 * least RECORD_MIN characters closed on the way recorded in ``close``; -1 with
 * ValueError when it is not closed. */
static Py_ssize_t
match_brackets(PyObject *text, Py_ssize_t start, PyObject *close)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (start < 0 || start >= n) {
        PyErr_Format(PyExc_ValueError, "unbalanced JSON container at offset %zd", start);
        return -1;
    }
    Py_UCS4 first = PyUnicode_READ(kind, data, start);
    if (first != '[' && first != '{') {
        PyErr_Format(PyExc_ValueError, "unbalanced JSON container at offset %zd", start);
        return -1;
    }
    /* The open containers: a stack that grows as deep as the nesting. */
    Py_ssize_t cap = 64, depth = 1;
    Py_ssize_t *stack = PyMem_Malloc(cap * sizeof(Py_ssize_t));
    if (stack == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    stack[0] = start;
    Py_ssize_t pos = start + 1;
    while (pos < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, pos);
        if (c == '"') {
            pos++;
            while (pos < n) {
                Py_UCS4 d = PyUnicode_READ(kind, data, pos);
                if (d == '"') {
                    break;
                }
                pos += d == '\\' ? 2 : 1;
            }
            if (pos >= n) {
                break; /* an unterminated string */
            }
        }
        else if (c == '[' || c == '{') {
            if (depth == cap) {
                Py_ssize_t *grown = PyMem_Realloc(stack, 2 * cap * sizeof(Py_ssize_t));
                if (grown == NULL) {
                    PyMem_Free(stack);
                    PyErr_NoMemory();
                    return -1;
                }
                stack = grown;
                cap *= 2;
            }
            stack[depth++] = pos;
        }
        else if (c == ']' || c == '}') {
            Py_ssize_t open = stack[--depth];
            if (pos - open >= RECORD_MIN && depth < RECORD_DEPTH) {
                PyObject *key = PyLong_FromSsize_t(open);
                PyObject *value = PyLong_FromSsize_t(pos);
                int failed = key == NULL || value == NULL || PyDict_SetItem(close, key, value) < 0;
                Py_XDECREF(key);
                Py_XDECREF(value);
                if (failed) {
                    PyMem_Free(stack);
                    return -1;
                }
            }
            if (depth == 0) {
                PyMem_Free(stack);
                return pos;
            }
        }
        pos++;
    }
    PyMem_Free(stack);
    PyErr_Format(PyExc_ValueError, "unbalanced JSON container at offset %zd", start);
    return -1;
}

/* The close of the container at ``start``: from ``close`` when known, else matched. */
static Py_ssize_t
close_of(PyObject *text, Py_ssize_t start, PyObject *close)
{
    PyObject *key = PyLong_FromSsize_t(start);
    if (key == NULL) {
        return -1;
    }
    PyObject *known = PyDict_GetItemWithError(close, key);
    Py_DECREF(key);
    if (known != NULL) {
        Py_ssize_t found = PyLong_AsSsize_t(known);
        if (found == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (found <= start || found >= PyUnicode_GET_LENGTH(text)) {
            PyErr_Format(PyExc_ValueError, "the close recorded for offset %zd is not after it in the text", start);
            return -1;
        }
        return found;
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    return match_brackets(text, start, close);
}


static Py_ssize_t
value_end(PyObject *text, int kind, const void *data, Py_ssize_t pos, Py_ssize_t n, PyObject *close)
{
    if (pos >= n) {
        return json_invalid(pos, "value");
    }
    Py_UCS4 c = PyUnicode_READ(kind, data, pos);
    if (c == '{' || c == '[') {
        Py_ssize_t found = close_of(text, pos, close);
        return found < 0 ? -1 : found + 1;
    }
    if (c == '"') {
        return string_end(kind, data, pos, n);
    }
    return scalar_end(kind, data, pos, n);
}

/* The child of a valid JSON container that begins at ``pos`` (after white space): its
 * begin, key_start, key_end, start, end and next (where the next one begins, or the
 * closing bracket) in k[0..5]. */
static int
scan_child(PyObject *text, int kind, const void *data, Py_ssize_t n, Py_ssize_t pos, int is_object, PyObject *close,
           Py_ssize_t *k)
{
    Py_ssize_t begin = pos, key_start = pos, key_end = pos;
    if (is_object) {
        key_end = string_end(kind, data, pos, n);
        if (key_end < 0) {
            return -1;
        }
        pos = skip_json_ws(kind, data, key_end, n);
        if (pos >= n || PyUnicode_READ(kind, data, pos) != ':') {
            json_invalid(pos, "colon");
            return -1;
        }
        pos = skip_json_ws(kind, data, pos + 1, n);
    }
    Py_ssize_t end = value_end(text, kind, data, pos, n, close);
    if (end < 0) {
        return -1;
    }
    Py_ssize_t next = skip_json_ws(kind, data, end, n);
    if (next < n && PyUnicode_READ(kind, data, next) == ',') {
        next = skip_json_ws(kind, data, next + 1, n);
    }
    if (next <= pos) {
        json_invalid(pos, "value"); /* no progress (a close recorded wrongly) */
        return -1;
    }
    k[0] = begin;
    k[1] = key_start;
    k[2] = key_end;
    k[3] = pos;
    k[4] = end;
    k[5] = next;
    return 0;
}

/* An int item as a Py_ssize_t (-1 with an exception set on a failure). */
static int
ssize_item_of(PyObject *v, Py_ssize_t *out)
{
    *out = PyLong_AsSsize_t(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* _json._soft: after the first line break in [a, b), else ``b``. */
static Py_ssize_t
soft_edge(int kind, const void *data, Py_ssize_t n, Py_ssize_t a, Py_ssize_t b)
{
    Py_ssize_t i = find_char(kind, data, n, '\n', a, b);
    if (i < 0) {
        i = find_char(kind, data, n, '\r', a, b);
    }
    return i < 0 ? b : i + 1;
}

/* One RFC 6901 reference token of a member's key (_jsontok.escape_pointer of
 * decode_key), ``decode`` asked only for a key with an escape in it. */
static PyObject *
pointer_token(PyObject *text, int kind, const void *data, Py_ssize_t key_start, Py_ssize_t key_end, PyObject *decode)
{
    PyObject *segment;
    if (find_char(kind, data, PyUnicode_GET_LENGTH(text), '\\', key_start, key_end) >= 0) {
        PyObject *raw = PyUnicode_Substring(text, key_start, key_end);
        segment = raw == NULL ? NULL : PyObject_CallOneArg(decode, raw);
        Py_XDECREF(raw);
        if (segment != NULL && !PyUnicode_Check(segment)) {
            Py_DECREF(segment);
            PyErr_SetString(PyExc_TypeError, "decode must give a str");
            return NULL;
        }
    }
    else {
        if (key_end - key_start < 2) {
            PyErr_SetString(PyExc_ValueError, "a key must be a JSON string token");
            return NULL;
        }
        segment = PyUnicode_Substring(text, key_start + 1, key_end - 1);
    }
    if (segment == NULL) {
        return NULL;
    }
    if (PyUnicode_FindChar(segment, '~', 0, PyUnicode_GET_LENGTH(segment), 1) == -1 &&
        PyUnicode_FindChar(segment, '/', 0, PyUnicode_GET_LENGTH(segment), 1) == -1) {
        return segment;
    }
    PyObject *tilde = PyUnicode_FromString("~"), *slash = PyUnicode_FromString("/");
    PyObject *t0 = PyUnicode_FromString("~0"), *t1 = PyUnicode_FromString("~1");
    PyObject *once = NULL, *twice = NULL;
    if (tilde && slash && t0 && t1) {
        once = PyUnicode_Replace(segment, tilde, t0, -1);
        twice = once == NULL ? NULL : PyUnicode_Replace(once, slash, t1, -1);
    }
    Py_XDECREF(tilde);
    Py_XDECREF(slash);
    Py_XDECREF(t0);
    Py_XDECREF(t1);
    Py_XDECREF(once);
    Py_DECREF(segment);
    return twice;
}

/* A Section from borrowed items (made as tuple.__new__ makes one). */
static PyObject *
section_of(PyTypeObject *section_type, PyObject *a, PyObject *b, PyObject *splitter, PyObject *state,
           PyObject *kind, PyObject *language, PyObject *path, int partial, int sticky)
{
    PyObject *section = section_type->tp_alloc(section_type, SECTION_FIELDS);
    if (section == NULL) {
        return NULL;
    }
    PyObject *items[SECTION_FIELDS] = {a, b, splitter, state, kind, language, path,
                                       partial ? Py_True : Py_False, sticky ? Py_True : Py_False};
    for (int f = 0; f < SECTION_FIELDS; f++) {
        PyTuple_SET_ITEM(section, f, Py_NewRef(items[f]));
    }
    return section;
}

/* A Section of the JSON splitter's (kind "json", no language), from borrowed items. */
static PyObject *
json_section(PyTypeObject *section_type, PyObject *kind_json, PyObject *a, PyObject *b, PyObject *splitter,
             PyObject *state, PyObject *path, int partial, int sticky)
{
    return section_of(section_type, a, b, splitter, state, kind_json, Py_None, path, partial, sticky);
}

/* _json._GAPS, the splitter of the sections no value edge cuts (brackets, scalars, the
 * white space around them), from json_setup; None before it. */
static PyObject *json_gaps = NULL;
#define GAPS (json_gaps != NULL ? json_gaps : Py_None)

/* The JSON Pointer of a member: ``base`` and its key (``is_object``), else its index. */
static PyObject *
member_pointer(PyObject *text, PyObject *base, int is_object, Py_ssize_t key_start, Py_ssize_t key_end,
               Py_ssize_t index, PyObject *decode)
{
    PyObject *token = is_object ? pointer_token(text, PyUnicode_KIND(text), PyUnicode_DATA(text), key_start, key_end,
                                                decode)
                                : PyUnicode_FromFormat("%zd", index);
    PyObject *pointer = token == NULL ? NULL : PyUnicode_Concat(base, token);
    Py_XDECREF(token);
    return pointer;
}

/* The edges and member Sections of the container opening at ``start`` and closing at
 * ``close`` whose ``count`` children (children_spans's, one or more) are at ``depth``:
 * json_members's work, new lists in *edges and *members. */
static int
members_of(PyObject *text, const Py_ssize_t *spans, Py_ssize_t count, Py_ssize_t start, Py_ssize_t close,
           Py_ssize_t depth, PyObject *base, PyObject *splitter, PyTypeObject *value_type,
           PyTypeObject *section_type, PyObject *decode, PyObject *no_open, PyObject **edges, PyObject **members,
           const Py_ssize_t *outer, Py_ssize_t index)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    *edges = *members = NULL;
    if (start < 0 || start >= n) {
        PyErr_Format(PyExc_ValueError, "no JSON container at offset %zd", start);
        return -1;
    }
    if (count < 1) {
        PyErr_SetString(PyExc_ValueError, "json_members needs one child or more");
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (spans[6 * i + 3] < 0 || spans[6 * i + 3] >= n || spans[6 * i + 4] < spans[6 * i + 3] ||
            spans[6 * i + 4] > n) {
            PyErr_SetString(PyExc_ValueError, "a child outside the text");
            return -1;
        }
    }
    int is_object = PyUnicode_READ(kind, data, start) == '{';
    PyObject *kind_json = PyUnicode_InternFromString("json");
    if (kind_json == NULL || (*edges = PyList_New(count + 1)) == NULL || (*members = PyList_New(count)) == NULL) {
        goto fail;
    }
    for (Py_ssize_t e = 0; e <= count; e++) {
        Py_ssize_t at;
        if (e == 0) {
            at = outer != NULL ? outer[0] : soft_edge(kind, data, n, start + 1, spans[0]);
        }
        else if (e == count) {
            at = outer != NULL ? outer[1] : soft_edge(kind, data, n, spans[6 * (count - 1) + 4], close);
        }
        else {
            Py_ssize_t begin = spans[6 * e];
            at = soft_edge(kind, data, n, find_char(kind, data, n, ',', spans[6 * (e - 1) + 4], begin) + 1, begin);
        }
        PyObject *v = PyLong_FromSsize_t(at);
        if (v == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(*edges, e, v);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        const Py_ssize_t *k = spans + 6 * i;
        PyObject *pointer = member_pointer(text, base, is_object, k[1], k[2], index + i, decode);
        if (pointer == NULL) {
            goto fail;
        }
        Py_UCS4 c = PyUnicode_READ(kind, data, k[3]);
        /* (A member with a scalar value is cut between its key and value, and inside a
         * long key: see _divisible.) */
        int divisible = c == '{' || c == '[' || (c == '"' && k[4] - k[3] > 2) || k[2] > k[1];
        Py_ssize_t vfields[6] = {k[3], k[4], depth, 0, k[1], k[2]};
        PyObject *value = value_type->tp_alloc(value_type, 8);
        int failed = value == NULL;
        for (int f = 0; f < 6 && !failed; f++) {
            PyObject *v = f == 3 ? Py_NewRef(pointer) : PyLong_FromSsize_t(vfields[f]);
            failed = v == NULL;
            if (!failed) {
                PyTuple_SET_ITEM(value, f, v);
            }
        }
        PyObject *section = NULL;
        if (!failed) {
            PyTuple_SET_ITEM(value, 6, Py_NewRef(no_open));
            PyTuple_SET_ITEM(value, 7, Py_NewRef(Py_False));
            section = json_section(section_type, kind_json, PyList_GET_ITEM(*edges, i), PyList_GET_ITEM(*edges, i + 1),
                                   divisible ? splitter : GAPS, value, pointer, 0, 0);
        }
        Py_XDECREF(value);
        Py_DECREF(pointer);
        if (section == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(*members, i, section);
    }
    Py_DECREF(kind_json);
    return 0;
fail:
    Py_XDECREF(kind_json);
    Py_CLEAR(*edges);
    Py_CLEAR(*members);
    return -1;
}

/* ---- JSONSplitter.split in C for value nodes (JSONSplitter._split is the Python
 * reference, and the path of every other state) ---- */

#define FLAT_DEPTH 64 /* _json._FLAT_DEPTH */

/* What json_setup was given (new references, replaced by a later call). */
static struct {
    PyTypeObject *splitter_type, *value_type, *prefix_type, *run_type, *section_type;
    PyObject *decode, *no_open, *kind_json, *n_structure, *n_close, *n_fallback;
    Py_ssize_t run; /* _json._RUN */
} J;

PyDoc_STRVAR(json_setup_doc,
"json_setup(splitter_type, value_type, prefix_type, run_type, section_type, decode, no_open, run, gaps)\n\n"
"The classes and helpers of _json that json_split makes and reads: JSONSplitter (its\n"
"``structure._close`` dict of closes and its ``_split`` fallback), _Value, _Prefix,\n"
"_Run, Section, decode_key, _Value's default ``open``, _RUN, and _GAPS (the splitter\n"
"of the sections no value edge cuts: brackets, scalars, the whitespace around them).");

static PyObject *
json_setup(PyObject *self, PyObject *args)
{
    PyTypeObject *types[5];
    PyObject *decode, *no_open, *gaps;
    Py_ssize_t run;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!OOnO:json_setup", &PyType_Type, &types[0], &PyType_Type, &types[1],
                          &PyType_Type, &types[2], &PyType_Type, &types[3], &PyType_Type, &types[4], &decode,
                          &no_open, &run, &gaps)) {
        return NULL;
    }
    for (int i = 1; i < 5; i++) {
        if (!PyType_IsSubtype(types[i], &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "value_type, prefix_type, run_type and section_type must be tuple types");
            return NULL;
        }
    }
    if (run < 2 || run > PY_SSIZE_T_MAX / (6 * (Py_ssize_t)sizeof(Py_ssize_t)) - 2) {
        /* (a run of one member would be cut into that member's pieces; the scan's buffer
         * holds run + 2 members of six offsets) */
        PyErr_SetString(PyExc_ValueError, "run must be 2 or more, and small enough to buffer");
        return NULL;
    }
    PyObject *names[4] = {PyUnicode_InternFromString("json"), PyUnicode_InternFromString("structure"),
                          PyUnicode_InternFromString("_close"), PyUnicode_InternFromString("_split")};
    if (names[0] == NULL || names[1] == NULL || names[2] == NULL || names[3] == NULL) {
        for (int i = 0; i < 4; i++) {
            Py_XDECREF(names[i]);
        }
        return NULL;
    }
    Py_XSETREF(J.splitter_type, (PyTypeObject *)Py_NewRef(types[0]));
    Py_XSETREF(J.value_type, (PyTypeObject *)Py_NewRef(types[1]));
    Py_XSETREF(J.prefix_type, (PyTypeObject *)Py_NewRef(types[2]));
    Py_XSETREF(J.run_type, (PyTypeObject *)Py_NewRef(types[3]));
    Py_XSETREF(J.section_type, (PyTypeObject *)Py_NewRef(types[4]));
    J.run = run;
    Py_XSETREF(J.decode, Py_NewRef(decode));
    Py_XSETREF(J.no_open, Py_NewRef(no_open));
    Py_XSETREF(json_gaps, Py_NewRef(gaps));
    Py_XSETREF(J.kind_json, names[0]);
    Py_XSETREF(J.n_structure, names[1]);
    Py_XSETREF(J.n_close, names[2]);
    Py_XSETREF(J.n_fallback, names[3]);
    Py_RETURN_NONE;
}

/* splitter.structure._close, the dict of closes (a new reference), or NULL. */
static PyObject *
closes_of(PyObject *splitter)
{
    PyObject *structure = PyObject_GetAttr(splitter, J.n_structure);
    PyObject *close = structure == NULL ? NULL : PyObject_GetAttr(structure, J.n_close);
    Py_XDECREF(structure);
    if (close != NULL && !PyDict_Check(close)) {
        Py_CLEAR(close);
        PyErr_SetString(PyExc_TypeError, "structure._close must be a dict");
    }
    return close;
}

/* A new int-triple tuple of ``type`` (the _Prefix's key_start, key_end, value_start). */
static PyObject *
prefix_new(Py_ssize_t key_start, Py_ssize_t key_end, Py_ssize_t value_start)
{
    PyObject *prefix = J.prefix_type->tp_alloc(J.prefix_type, 3);
    Py_ssize_t fields[3] = {key_start, key_end, value_start};
    for (int f = 0; f < 3 && prefix != NULL; f++) {
        PyObject *v = PyLong_FromSsize_t(fields[f]);
        if (v == NULL) {
            Py_CLEAR(prefix);
            break;
        }
        PyTuple_SET_ITEM(prefix, f, v);
    }
    return prefix;
}

/* JSONSplitter._peel: the member's key (to the colon), then its value, peeled. */
static PyObject *
json_peel(PyObject *splitter, PyObject *text, PyObject *section, PyObject *node, Py_ssize_t key_start,
          Py_ssize_t key_end, Py_ssize_t start, int is_string)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t colon = find_char(kind, data, PyUnicode_GET_LENGTH(text), ':', key_end, start) + 1;
    PyObject *at = PyLong_FromSsize_t(colon);
    PyObject *prefix = at == NULL ? NULL : prefix_new(key_start, key_end, colon);
    PyObject *value = prefix == NULL ? NULL : J.value_type->tp_alloc(J.value_type, 8);
    PyObject *out = NULL;
    if (value != NULL) {
        for (int f = 0; f < 7; f++) {
            PyTuple_SET_ITEM(value, f, Py_NewRef(PyTuple_GET_ITEM(node, f)));
        }
        PyTuple_SET_ITEM(value, 7, Py_NewRef(Py_True));
        PyObject *path = PyTuple_GET_ITEM(section, SECTION_PATH);
        PyObject *head = json_section(J.section_type, J.kind_json, PyTuple_GET_ITEM(section, SECTION_START), at,
                                      splitter, prefix, path, is_string, 1);
        PyObject *tail = head == NULL ? NULL
                                      : json_section(J.section_type, J.kind_json, at, PyTuple_GET_ITEM(section, SECTION_END),
                                                     splitter, value, path, 0, 0);
        out = tail == NULL ? NULL : PyList_New(2);
        if (out != NULL) {
            PyList_SET_ITEM(out, 0, head);
            PyList_SET_ITEM(out, 1, tail);
        }
        else {
            Py_XDECREF(head);
            Py_XDECREF(tail);
        }
    }
    Py_XDECREF(at);
    Py_XDECREF(prefix);
    Py_XDECREF(value);
    return out;
}

/* A run of ``count`` members of the container opening at ``start`` (the first of them
 * member ``index``, its key at k[1..2], beginning at k[0]), from edge ``a`` to ``b``:
 * its Section, with the first member's pointer. */
static PyObject *
run_section(PyObject *splitter, PyObject *text, Py_ssize_t start, Py_ssize_t depth, PyObject *pointer,
            PyObject *base, int is_object, Py_ssize_t index, const Py_ssize_t *k, Py_ssize_t count, Py_ssize_t a,
            Py_ssize_t b)
{
    PyObject *path = member_pointer(text, base, is_object, k[1], k[2], index, J.decode);
    PyObject *run = path == NULL ? NULL : J.run_type->tp_alloc(J.run_type, 6);
    PyObject *section = NULL;
    if (run != NULL) {
        Py_ssize_t fields[6] = {start, depth, 0, index, k[0], count};
        int failed = 0;
        for (int f = 0; f < 6 && !failed; f++) {
            PyObject *v = f == 2 ? Py_NewRef(pointer) : PyLong_FromSsize_t(fields[f]);
            failed = v == NULL;
            if (!failed) {
                PyTuple_SET_ITEM(run, f, v);
            }
        }
        PyObject *ea = failed ? NULL : PyLong_FromSsize_t(a), *eb = ea == NULL ? NULL : PyLong_FromSsize_t(b);
        if (eb != NULL) {
            section = json_section(J.section_type, J.kind_json, ea, eb, splitter, run, path, 0, 0);
        }
        Py_XDECREF(ea);
        Py_XDECREF(eb);
    }
    Py_XDECREF(run);
    Py_XDECREF(path);
    return section;
}

/* The Sections of the runs of a container of more than J.run members: ``buffered``
 * children already scanned in ``spans``, the rest scanned here one at a time (so no
 * array of every member is made). *first and *last: the edges before the first member
 * and after the last. */
static PyObject *
json_runs(PyObject *splitter, PyObject *text, PyObject *close, Py_ssize_t start, Py_ssize_t closing,
          Py_ssize_t depth, PyObject *pointer, PyObject *base, const Py_ssize_t *spans, Py_ssize_t buffered,
          Py_ssize_t *first, Py_ssize_t *last_edge)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    int is_object = PyUnicode_READ(kind, data, start) == '{';
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    Py_ssize_t lead[6], k[6];
    memcpy(lead, spans, sizeof(lead));
    *first = soft_edge(kind, data, n, start + 1, spans[0]);
    Py_ssize_t edge = *first, index = 0, prev_end = spans[4], pos = spans[5];
    for (Py_ssize_t j = 1;; j++) { /* member j, if there is one */
        int last = j >= buffered && pos >= closing;
        if (!last && j < buffered) {
            memcpy(k, spans + 6 * j, sizeof(k));
        }
        else if (!last && scan_child(text, kind, data, n, pos, is_object, close, k) < 0) {
            goto fail;
        }
        /* The run of members index .. j - 1 ends here (a last member alone joins it:
         * a run of one would be cut as its member's pieces, not as the member). */
        if (last || (j % J.run == 0 && !(j + 1 >= buffered && k[5] >= closing))) {
            Py_ssize_t at = last ? (*last_edge = soft_edge(kind, data, n, prev_end, closing))
                                 : soft_edge(kind, data, n, find_char(kind, data, n, ',', prev_end, k[0]) + 1, k[0]);
            PyObject *section =
                run_section(splitter, text, start, depth, pointer, base, is_object, index, lead, j - index, edge, at);
            if (section == NULL || PyList_Append(out, section) < 0) {
                Py_XDECREF(section);
                goto fail;
            }
            Py_DECREF(section);
            if (last) {
                return out;
            }
            memcpy(lead, k, sizeof(lead));
            edge = at;
            index = j;
        }
        prev_end = k[4];
        pos = k[5];
    }
fail:
    Py_DECREF(out);
    return NULL;
}

/* JSONSplitter._split_container for a complete container above FLAT_DEPTH: its members,
 * or runs of J.run members where it has more. */
static PyObject *
json_container(PyObject *splitter, PyObject *text, PyObject *section, PyObject *close, PyObject *node,
               Py_ssize_t start, Py_ssize_t depth, Py_ssize_t key_start, Py_ssize_t key_end)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t closing = close_of(text, start, close);
    if (closing < 0) {
        return NULL;
    }
    Py_ssize_t cap = J.run + 2, count = 0;
    Py_ssize_t *spans = (size_t)cap > PY_SSIZE_T_MAX / (6 * sizeof(Py_ssize_t)) ? NULL : PyMem_New(Py_ssize_t, 6 * cap);
    if (spans == NULL) {
        return PyErr_NoMemory();
    }
    int is_object = PyUnicode_READ(kind, data, start) == '{';
    Py_ssize_t pos = skip_json_ws(kind, data, start + 1, n);
    while (pos < closing && count < cap) {
        if (scan_child(text, kind, data, n, pos, is_object, close, spans + 6 * count) < 0) {
            PyMem_Free(spans);
            return NULL;
        }
        pos = spans[6 * count + 5];
        count++;
    }
    if (count == 0) { /* an empty container: the white space inside it, in Python */
        PyMem_Free(spans);
        return PyObject_CallMethodObjArgs(splitter, J.n_fallback, text, section, NULL);
    }
    PyObject *pointer = PyTuple_GET_ITEM(node, 3);
    PyObject *base = PyUnicode_Check(pointer) ? PyUnicode_FromFormat("%U/", pointer) : NULL;
    if (base == NULL && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_TypeError, "a JSON value's pointer must be a str");
    }
    PyObject *members = NULL, *out = NULL, *first = NULL, *last = NULL;
    Py_ssize_t parts = 0, last_at = 0, first_at = 0;
    if (base == NULL) {
        goto done;
    }
    if (count > J.run + 1) {
        members = json_runs(splitter, text, close, start, closing, depth + 1, pointer, base, spans, count, &first_at,
                            &last_at);
        if (members == NULL || (first = PyLong_FromSsize_t(first_at)) == NULL ||
            (last = PyLong_FromSsize_t(last_at)) == NULL) {
            goto done;
        }
    }
    else {
        PyObject *edges;
        if (members_of(text, spans, count, start, closing, depth + 1, base, splitter, J.value_type, J.section_type,
                       J.decode, J.no_open, &edges, &members, NULL, 0) < 0) {
            goto done;
        }
        first = Py_NewRef(PyList_GET_ITEM(edges, 0));
        last = Py_NewRef(PyList_GET_ITEM(edges, count));
        Py_DECREF(edges);
        if (ssize_item_of(last, &last_at) < 0) {
            goto done;
        }
    }
    parts = PyList_GET_SIZE(members);
    Py_ssize_t s_start, s_end;
    if (ssize_item_of(PyTuple_GET_ITEM(section, SECTION_START), &s_start) < 0 ||
        ssize_item_of(PyTuple_GET_ITEM(section, SECTION_END), &s_end) < 0) {
        goto done;
    }
    /* The opening line (key, bracket) is sticky: a chunk does not end with it. */
    PyObject *head;
    if (key_end - key_start > 2 && s_start <= key_start) {
        PyObject *prefix = prefix_new(key_start, key_end, start);
        head = prefix == NULL ? NULL
                              : json_section(J.section_type, J.kind_json, PyTuple_GET_ITEM(section, SECTION_START), first,
                                             splitter, prefix, pointer, 0, 1);
        Py_XDECREF(prefix);
    }
    else {
        head = json_section(J.section_type, J.kind_json, PyTuple_GET_ITEM(section, SECTION_START), first, GAPS,
                            Py_None, pointer, 0, 1);
    }
    PyObject *tail = NULL;
    if (head != NULL && last_at < s_end) {
        tail = json_section(J.section_type, J.kind_json, last, PyTuple_GET_ITEM(section, SECTION_END), GAPS, Py_None,
                            pointer, 0, 0);
        if (tail == NULL) {
            Py_CLEAR(head);
        }
    }
    if (head == NULL) {
        goto done;
    }
    out = PyList_New(1 + parts + (tail != NULL));
    if (out == NULL) {
        Py_DECREF(head);
        Py_XDECREF(tail);
        goto done;
    }
    PyList_SET_ITEM(out, 0, head);
    for (Py_ssize_t i = 0; i < parts; i++) {
        PyList_SET_ITEM(out, 1 + i, Py_NewRef(PyList_GET_ITEM(members, i)));
    }
    if (tail != NULL) {
        PyList_SET_ITEM(out, 1 + parts, tail);
    }
done:
    PyMem_Free(spans);
    Py_XDECREF(base);
    Py_XDECREF(first);
    Py_XDECREF(last);
    Py_XDECREF(members);
    return out;
}

/* JSONSplitter._split_run: the members of a run, from its own edges. */
static PyObject *
json_run(PyObject *splitter, PyObject *text, PyObject *section, PyObject *run)
{
    Py_ssize_t f[6]; /* start, depth, (pointer), index, begin, count */
    for (int i = 0; i < 6; i++) {
        if (i != 2 && ssize_item_of(PyTuple_GET_ITEM(run, i), &f[i]) < 0) {
            return NULL;
        }
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), outer[2];
    PyObject *pointer = PyTuple_GET_ITEM(run, 2);
    if (ssize_item_of(PyTuple_GET_ITEM(section, SECTION_START), &outer[0]) < 0 ||
        ssize_item_of(PyTuple_GET_ITEM(section, SECTION_END), &outer[1]) < 0) {
        return NULL;
    }
    Py_UCS4 c = f[0] >= 0 && f[0] < n ? PyUnicode_READ_CHAR(text, f[0]) : 0;
    if ((c != '{' && c != '[') || f[4] <= f[0] || f[4] >= n || f[5] < 1 || f[5] > n || f[3] < 0 ||
        !PyUnicode_Check(pointer)) {
        PyErr_SetString(PyExc_ValueError, "not a run of a container's members");
        return NULL;
    }
    PyObject *close = closes_of(splitter);
    if (close == NULL) {
        return NULL;
    }
    PyObject *base = PyUnicode_FromFormat("%U/", pointer);
    Py_ssize_t *spans = base == NULL ? NULL : PyMem_New(Py_ssize_t, 6 * f[5]);
    PyObject *edges = NULL, *members = NULL;
    if (spans != NULL) {
        int kind = PyUnicode_KIND(text), is_object = c == '{';
        const void *data = PyUnicode_DATA(text);
        Py_ssize_t pos = f[4], i = 0;
        for (; i < f[5]; i++) {
            if (scan_child(text, kind, data, n, pos, is_object, close, spans + 6 * i) < 0) {
                break;
            }
            pos = spans[6 * i + 5];
        }
        if (i == f[5]) {
            members_of(text, spans, f[5], f[0], 0, f[1], base, splitter, J.value_type, J.section_type, J.decode,
                       J.no_open, &edges, &members, outer, f[3]);
        }
    }
    else if (base != NULL) {
        PyErr_NoMemory();
    }
    PyMem_Free(spans);
    Py_XDECREF(base);
    Py_XDECREF(edges);
    Py_DECREF(close);
    return members;
}

/* Is a JSON section's state one JSONSplitter.split_edges gives cuts for as offsets: a
 * string or a piece of one (a state that is no value, run or key prefix: the top and a
 * flattened container's pieces too, for which split_edges gives None and split is
 * asked), a string value with no key left to peel off first, or a container at depth
 * FLAT_DEPTH or more? */
static int
json_string_state(PyObject *text, PyObject *node)
{
    if (Py_IS_TYPE(node, J.run_type)) {
        return 0;
    }
    if (!Py_IS_TYPE(node, J.value_type)) {
        return !Py_IS_TYPE(node, J.prefix_type); /* a _Text, or the top (split_edges: None) */
    }
    if (PyTuple_GET_SIZE(node) != 8) {
        return 0;
    }
    Py_ssize_t start = PyLong_AsSsize_t(PyTuple_GET_ITEM(node, 0));
    Py_ssize_t depth = PyLong_AsSsize_t(PyTuple_GET_ITEM(node, 2));
    Py_ssize_t key_start = PyLong_AsSsize_t(PyTuple_GET_ITEM(node, 4));
    Py_ssize_t key_end = PyLong_AsSsize_t(PyTuple_GET_ITEM(node, 5));
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (start < 0 || start >= PyUnicode_GET_LENGTH(text)) {
        return 0;
    }
    Py_UCS4 c = PyUnicode_READ_CHAR(text, start);
    if ((c == '[' || c == '{') && depth >= FLAT_DEPTH) {
        return 1; /* flattened: split_edges gives every value edge below it as offsets */
    }
    if (c != '"') {
        return 0;
    }
    int peeled = PyTuple_GET_ITEM(node, 7) == Py_True;
    return !(key_end > key_start && !peeled && depth < FLAT_DEPTH);
}

/* JSONSplitter.split: value nodes here, any other state by ``splitter._split``. */
static PyObject *
json_split_impl(PyObject *splitter, PyObject *text, PyObject *section)
{
    if (J.value_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "json_split needs json_setup first");
        return NULL;
    }
    if (!PyUnicode_Check(text) || !PyTuple_Check(section) || PyTuple_GET_SIZE(section) < SECTION_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "json_split(splitter, text: str, section: Section)");
        return NULL;
    }
    PyObject *node = PyTuple_GET_ITEM(section, SECTION_STATE);
    if (Py_IS_TYPE(node, J.run_type) && PyTuple_GET_SIZE(node) == 6) {
        return json_run(splitter, text, section, node);
    }
    if (!Py_IS_TYPE(node, J.value_type) || PyTuple_GET_SIZE(node) != 8) {
        goto fallback;
    }
    Py_ssize_t start, depth, key_start, key_end;
    if (ssize_item_of(PyTuple_GET_ITEM(node, 0), &start) < 0 || ssize_item_of(PyTuple_GET_ITEM(node, 2), &depth) < 0 ||
        ssize_item_of(PyTuple_GET_ITEM(node, 4), &key_start) < 0 ||
        ssize_item_of(PyTuple_GET_ITEM(node, 5), &key_end) < 0) {
        return NULL;
    }
    if (start < 0 || start >= PyUnicode_GET_LENGTH(text)) {
        PyErr_SetString(PyExc_IndexError, "a JSON value outside the text");
        return NULL;
    }
    if (key_start < 0 || key_end < 0 || key_start > start || key_end > start) {
        goto fallback; /* not a member's key before its value: the Python path decides */
    }
    Py_UCS4 c = PyUnicode_READ_CHAR(text, start);
    int peeled = PyObject_IsTrue(PyTuple_GET_ITEM(node, 7));
    if (peeled < 0) {
        return NULL;
    }
    if (key_end > key_start && !peeled && depth < FLAT_DEPTH) {
        return json_peel(splitter, text, section, node, key_start, key_end, start, c == '"');
    }
    if (c == '"') {
        goto fallback;
    }
    if (c != '{' && c != '[') { /* a scalar: the white space around it, in Python */
        goto fallback;
    }
    int open = PyObject_IsTrue(PyTuple_GET_ITEM(node, 6));
    if (open != 0 || depth >= FLAT_DEPTH) { /* cut short, or flattened: in Python */
        if (open < 0) {
            return NULL;
        }
        goto fallback;
    }
    PyObject *close = closes_of(splitter);
    if (close == NULL) {
        return NULL;
    }
    PyObject *out = json_container(splitter, text, section, close, node, start, depth, key_start, key_end);
    Py_DECREF(close);
    return out;
fallback:
    return PyObject_CallMethodObjArgs(splitter, J.n_fallback, text, section, NULL);
}

PyDoc_STRVAR(json_split_doc,
"json_split(splitter, text, section) -> list\n\n"
"JSONSplitter.split: a member's key apart from its value (_peel), the members of a\n"
"complete container above depth 64 or its runs of _RUN members (_split_container), and\n"
"a run's members (_split_run), made here; any other state (a string, the top, a key, a\n"
"container still open or deeper) by ``splitter._split``.");

static PyObject *
json_split(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "json_split takes splitter, text and section");
        return NULL;
    }
    return json_split_impl(args[0], args[1], args[2]);
}


/* ---- Part prefixes ---- */

/* The truth of an attribute (-1 with an exception set when it cannot be read). */
static int
get_truth(PyObject *obj, PyObject *name)
{
    PyObject *got = PyObject_GetAttr(obj, name);
    if (got == NULL) {
        return -1;
    }
    int truth = PyObject_IsTrue(got);
    Py_DECREF(got);
    return truth;
}

/* bisect_right over the values of a buffer at [lo, hi). */
static Py_ssize_t
bisect_buffer(const Ints *v, Py_ssize_t x, Py_ssize_t lo, Py_ssize_t hi)
{
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (buffer_at(v, mid) <= x) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}




/* ---- Packing (Engine._pack, and Engine._place for prose, which this mirrors exactly) ---- */

/* As _engine._MEMO: a memo of counts is emptied at this many entries. */
#define MEMO 4096
/* As _engine._SHORT: stretches up to this many characters are counted once by their text. */
#define SHORT 32

/* A RawChunk's items (a named tuple of seven). */
#define RAW_ITEMS 7

typedef struct {
    PyObject *text;
    Py_ssize_t budget;
    PyObject *view;        /* borrowed: handed to engine._place */
    PyObject *out;         /* engine.out */
    PyObject *count_text;  /* engine.sizer.count(str) */
    PyObject *short_memo;  /* engine._short: counts of short stretches by their text */
    PyObject *head;        /* engine._head: count from a position to the additive one after it */
    PyObject *tail;        /* engine._tail: count back to the additive one before a position */
    PyObject *place;       /* engine._place(section, view, lead) */
    PyObject *span;        /* engine._span(a, c) */
    PyObject *meta;        /* _engine._meta */
    PyTypeObject *raw_type;
    PyTypeObject *section_type;
    Junction junction;
    int rule;
    Ints ends;
    Py_ssize_t hint; /* the last answer of ends_before */
    Py_ssize_t lo, hi;
    Ints seams;
    /* Prose descents made here (prose_type NULL: every part that does not fit goes to
     * engine._place): the splitter class, _prose.boundaries for the levels below the
     * word, the most characters a token holds, and the level scans' state. */
    PyObject *prose_type;
    PyObject *boundaries;
    Py_ssize_t max_chars;
    Scan scan;
    Py_buffer flag_cache;
    int has_flag_cache;
    /* Interned attribute names, for chunks that are not exactly raw_type. */
    PyObject *n_start, *n_end, *n_tokens, *n_first, *n_oversize, *n_sticky_end, *n_partial;
} Packer;

/* The parts of one packing: edges[0..k], and how many of the view's tokens end at or
 * before each (4-byte integers where the text is shorter than 2**31 characters: a
 * section cut at every character has a prefix per character). */
typedef struct {
    Ints edges;
    Py_ssize_t k;
    void *prefix;
    int prefix_width;
    int64_t *owned; /* the edges' memory, when it is this level's own */
} Level;

static inline Py_ssize_t
prefix_at(const Level *L, Py_ssize_t e)
{
    return L->prefix_width == 4 ? ((const int32_t *)L->prefix)[e] : ((const Py_ssize_t *)L->prefix)[e];
}

/* What a section is but for its span (borrowed references). */
typedef struct {
    PyObject *splitter, *state, *kind, *language, *path;
    int partial, sticky;
} Tmpl;

/* The types of the states of flat sections (_engine.flat_state): a run of sibling parts
 * packed as if its parts stood in its place. */
static PyObject *FLAT_TYPES = NULL;

static int
is_flat(PyObject *state)
{
    if (FLAT_TYPES == NULL) {
        return 0;
    }
    for (Py_ssize_t f = 0; f < PyTuple_GET_SIZE(FLAT_TYPES); f++) {
        if ((PyObject *)Py_TYPE(state) == PyTuple_GET_ITEM(FLAT_TYPES, f)) {
            return 1;
        }
    }
    return 0;
}

PyDoc_STRVAR(flat_setup_doc,
"flat_setup(types)\n\n"
"The types of the states of flat sections (_engine.flat_state), as a tuple.");

static PyObject *
flat_setup(PyObject *self, PyObject *arg)
{
    if (!PyTuple_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "flat_setup takes a tuple of types");
        return NULL;
    }
    for (Py_ssize_t f = 0; f < PyTuple_GET_SIZE(arg); f++) {
        if (!PyType_Check(PyTuple_GET_ITEM(arg, f))) {
            PyErr_SetString(PyExc_TypeError, "flat_setup takes a tuple of types");
            return NULL;
        }
    }
    Py_XSETREF(FLAT_TYPES, Py_NewRef(arg));
    Py_RETURN_NONE;
}

/* A RawChunk's fields (``first`` a new reference). */
typedef struct {
    Py_ssize_t start, end, tokens;
    PyObject *first;
    int oversize, sticky_end, partial;
} RawFields;

/* The first additive position from ``p`` in the direction of ``step`` (as forward and
 * backward give it), -1 for none near, -2 on an error. */
static Py_ssize_t
find_additive(Packer *P, Py_ssize_t p, int step)
{
    if (p < 0 || p >= PyUnicode_GET_LENGTH(P->text)) {
        PyErr_SetString(PyExc_IndexError, "position outside the text");
        return -2;
    }
    return scan_additive(&P->junction, p, P->rule, step);
}

/* An int a Python call returned, as a count (-1 with an exception set on a failure). */
static Py_ssize_t
as_count(PyObject *got)
{
    if (got == NULL) {
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(got);
    Py_DECREF(got);
    if (n < 0 && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "a token count must not be negative");
    }
    return n < 0 ? -1 : n;
}

/* sizer.count(text[a:b]) */
static Py_ssize_t
count_fresh(Packer *P, Py_ssize_t a, Py_ssize_t b)
{
    PyObject *piece = PyUnicode_Substring(P->text, a, b);
    if (piece == NULL) {
        return -1;
    }
    PyObject *got = PyObject_CallOneArg(P->count_text, piece);
    Py_DECREF(piece);
    return as_count(got);
}

/* Engine._count: the exact count of [a, b), by its text when it is short. */
static Py_ssize_t
count_range(Packer *P, Py_ssize_t a, Py_ssize_t b)
{
    if (b - a > SHORT) {
        return count_fresh(P, a, b);
    }
    PyObject *piece = PyUnicode_Substring(P->text, a, b);
    if (piece == NULL) {
        return -1;
    }
    Py_ssize_t n;
    PyObject *found = PyDict_GetItemWithError(P->short_memo, piece); /* borrowed */
    if (found != NULL) {
        n = PyLong_AsSsize_t(found);
        Py_DECREF(piece);
        return n == -1 && PyErr_Occurred() ? -1 : n;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(piece);
        return -1;
    }
    n = as_count(PyObject_CallOneArg(P->count_text, piece));
    if (n >= 0) {
        if (PyDict_GET_SIZE(P->short_memo) >= MEMO) {
            PyDict_Clear(P->short_memo);
        }
        PyObject *v = PyLong_FromSsize_t(n);
        if (v == NULL || PyDict_SetItem(P->short_memo, piece, v) < 0) {
            n = -1;
        }
        Py_XDECREF(v);
    }
    Py_DECREF(piece);
    return n;
}

/* The count of [a, b) kept in ``memo`` under ``key`` (counted once). */
static Py_ssize_t
memo_count(Packer *P, PyObject *memo, Py_ssize_t key, Py_ssize_t a, Py_ssize_t b)
{
    PyObject *k = PyLong_FromSsize_t(key);
    if (k == NULL) {
        return -1;
    }
    PyObject *found = PyDict_GetItemWithError(memo, k); /* borrowed */
    Py_ssize_t n;
    if (found != NULL) {
        n = PyLong_AsSsize_t(found);
        if (n == -1 && PyErr_Occurred()) {
            Py_DECREF(k);
            return -1;
        }
    }
    else {
        if (PyErr_Occurred()) {
            Py_DECREF(k);
            return -1;
        }
        n = count_range(P, a, b);
        if (n < 0) {
            Py_DECREF(k);
            return -1;
        }
        if (PyDict_GET_SIZE(memo) >= MEMO) {
            PyDict_Clear(memo);
        }
        PyObject *v = PyLong_FromSsize_t(n);
        if (v == NULL || PyDict_SetItem(memo, k, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(k);
            return -1;
        }
        Py_DECREF(v);
    }
    Py_DECREF(k);
    return n;
}

/* bisect_right over ``v``: how many of its (sorted) values are at most ``x``, -1 on an
 * error. */
static Py_ssize_t
ints_bisect_right(const Ints *v, Py_ssize_t x)
{
    Py_ssize_t lo = 0, hi = v->len;
    if (v->tuple == NULL) {
        return bisect_buffer(v, x, lo, hi); /* read in place, without ints_at's checks */
    }
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        long long at = ints_at(v, mid);
        if (at == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (at <= x) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

/* ints_bisect_right over a buffer, galloping out from ``hint`` (an earlier answer): a
 * question near the last one reads memory near it. A whole bisection of the token ends
 * of a 16 MB text (16 MB of them) missed the CPU caches at nearly every step. */
static Py_ssize_t
bisect_from(const Ints *v, Py_ssize_t x, Py_ssize_t hint)
{
    Py_ssize_t n = v->len, lo, hi, bound = 1;
    if (hint < 0 || hint > n) {
        hint = n / 2;
    }
    if (hint == 0 || buffer_at(v, hint - 1) <= x) {
        /* the answer is at or after hint */
        lo = hint;
        while (lo + bound - 1 < n && buffer_at(v, lo + bound - 1) <= x) {
            lo += bound;
            bound *= 2;
        }
        hi = lo + bound - 1 < n ? lo + bound - 1 : n;
    }
    else {
        /* before it: the value at hint - 1 is over x */
        hi = hint - 1;
        while (hi - bound >= 0 && buffer_at(v, hi - bound) > x) {
            hi -= bound;
            bound *= 2;
        }
        lo = hi - bound + 1 > 0 ? hi - bound + 1 : 0;
    }
    return bisect_buffer(v, x, lo, hi);
}

/* How many of the view's tokens end at or before ``x`` (-1 on an error). */
static inline Py_ssize_t
ends_before(Packer *P, Py_ssize_t x)
{
    if (P->ends.tuple != NULL) {
        return ints_bisect_right(&P->ends, x);
    }
    P->hint = bisect_from(&P->ends, x, P->hint);
    return P->hint;
}

/* Whether a seam of the view lies strictly between a and b (-1 on an error). */
static int
seam_inside(Packer *P, Py_ssize_t a, Py_ssize_t b)
{
    if (P->seams.len == 0) {
        return 0;
    }
    Py_ssize_t i = ints_bisect_right(&P->seams, a);
    if (i < 0) {
        return -1;
    }
    if (i >= P->seams.len) {
        return 0;
    }
    long long v = ints_at(&P->seams, i);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    return v < b;
}

/* Engine._exact: the exact count of [a, b) from the view (-1 on an error). */
static Py_ssize_t
exact(Packer *P, Py_ssize_t a, Py_ssize_t b)
{
    int seam = seam_inside(P, a, b);
    if (seam < 0) {
        return -1;
    }
    if (seam) {
        return count_range(P, a, b);
    }
    if (a == P->lo && b == P->hi) {
        return P->ends.len;
    }
    Py_ssize_t extra = 0, r = a;
    if (a != P->lo) {
        r = find_additive(P, a, 1);
        if (r == -2) {
            return -1;
        }
        if (r != a) {
            if (r < 0 || r >= b) {
                return count_range(P, a, b);
            }
            Py_ssize_t head = memo_count(P, P->head, a, a, r);
            if (head < 0) {
                return -1;
            }
            extra += head;
        }
    }
    if (b != P->hi) {
        Py_ssize_t back = find_additive(P, b, -1);
        if (back == -2) {
            return -1;
        }
        if (back != b) {
            if (back < r) {
                return count_range(P, a, b);
            }
            Py_ssize_t tail = memo_count(P, P->tail, b, back, b);
            if (tail < 0) {
                return -1;
            }
            extra += tail;
            b = back;
        }
    }
    Py_ssize_t upto_b = ends_before(P, b);
    Py_ssize_t upto_r = upto_b < 0 ? -1 : ends_before(P, r);
    return upto_r < 0 ? -1 : extra + upto_b - upto_r;
}

static inline Py_ssize_t
edge(Level *L, Py_ssize_t i)
{
    long long v = ints_at(&L->edges, i);
    return (Py_ssize_t)v; /* -1 with an exception set: checked by the callers */
}

/* The exact count of parts i..j-1 (after the open chunk when ``joined`` >= 0: 1 when
 * they join it additively, 0 when not), -1 on an error. */
static Py_ssize_t
size(Packer *P, Level *L, Py_ssize_t i, Py_ssize_t j, int joined, Py_ssize_t base, Py_ssize_t origin)
{
    Py_ssize_t ei = edge(L, i), ej = edge(L, j);
    if ((ei == -1 || ej == -1) && PyErr_Occurred()) {
        return -1;
    }
    if (joined < 0) {
        return exact(P, ei, ej);
    }
    if (joined) {
        Py_ssize_t n = exact(P, ei, ej);
        return n < 0 ? -1 : base + n;
    }
    if (origin >= P->lo) {
        return exact(P, origin, ej);
    }
    return count_fresh(P, origin, ej);
}

/* bisect_right(L's prefix, x, lo, hi) */
static inline Py_ssize_t
bisect_prefix(const Level *L, Py_ssize_t x, Py_ssize_t lo, Py_ssize_t hi)
{
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (prefix_at(L, mid) <= x) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

/* Item ``index`` of a Section (a named tuple of nine items) as a truth value. */
static int
section_truth(PyObject *section, Py_ssize_t index)
{
    if (!PyTuple_Check(section) || PyTuple_GET_SIZE(section) < SECTION_ITEMS) {
        PyErr_SetString(PyExc_TypeError, "parts must be Sections");
        return -1;
    }
    return PyObject_IsTrue(PyTuple_GET_ITEM(section, index));
}

/* The template of a Section (which must be one). */
static int
tmpl_of(PyObject *section, Tmpl *t)
{
    int partial = section_truth(section, SECTION_PARTIAL);
    int sticky = partial < 0 ? -1 : section_truth(section, SECTION_STICKY);
    if (sticky < 0) {
        return -1;
    }
    t->splitter = PyTuple_GET_ITEM(section, SECTION_SPLITTER);
    t->state = PyTuple_GET_ITEM(section, SECTION_STATE);
    t->kind = PyTuple_GET_ITEM(section, SECTION_KIND);
    t->language = PyTuple_GET_ITEM(section, SECTION_LANGUAGE);
    t->path = PyTuple_GET_ITEM(section, SECTION_PATH);
    t->partial = partial;
    t->sticky = sticky;
    return 0;
}

/* Whether a part like ``t`` is descended into here (a prose section). */
static inline int
prose_part(Packer *P, const Tmpl *t)
{
    return P->prose_type != NULL && Py_IS_TYPE(t->splitter, (PyTypeObject *)P->prose_type);
}

/* A new instance of ``type`` (a tuple or a subclass of it) with ``n`` items, to be filled:
 * as tuple.__new__ makes one, without the class's own __new__. */
static PyObject *
new_tuple_of(PyTypeObject *type, Py_ssize_t n)
{
    if (type == &PyTuple_Type) {
        return PyTuple_New(n);
    }
    return type->tp_alloc(type, n);
}

/* _meta(Section(a, b, ...like t)) for a section with a splitter: its kind, language and
 * path, without the splitter and state. */
static PyObject *
light_meta(Packer *P, Py_ssize_t a, Py_ssize_t b, const Tmpl *t)
{
    PyObject *start = PyLong_FromSsize_t(a), *end = PyLong_FromSsize_t(b);
    PyObject *light = start != NULL && end != NULL ? new_tuple_of(P->section_type, SECTION_ITEMS) : NULL;
    if (light == NULL) {
        Py_XDECREF(start);
        Py_XDECREF(end);
        return NULL;
    }
    PyTuple_SET_ITEM(light, SECTION_START, start);
    PyTuple_SET_ITEM(light, SECTION_END, end);
    PyTuple_SET_ITEM(light, SECTION_SPLITTER, Py_NewRef(Py_None));
    PyTuple_SET_ITEM(light, SECTION_STATE, Py_NewRef(Py_None));
    PyTuple_SET_ITEM(light, SECTION_KIND, Py_NewRef(t->kind));
    PyTuple_SET_ITEM(light, SECTION_LANGUAGE, Py_NewRef(t->language));
    PyTuple_SET_ITEM(light, SECTION_PATH, Py_NewRef(t->path));
    PyTuple_SET_ITEM(light, SECTION_PARTIAL, Py_NewRef(Py_False));
    PyTuple_SET_ITEM(light, SECTION_STICKY, Py_NewRef(Py_False));
    return light;
}

/* A RawChunk (a named tuple, made as tuple.__new__ makes one). */
static PyObject *
raw_new(PyTypeObject *raw_type, Py_ssize_t start, Py_ssize_t end, Py_ssize_t tokens, PyObject *first, int oversize,
        int sticky_end, int partial)
{
    PyObject *s = PyLong_FromSsize_t(start), *e = PyLong_FromSsize_t(end), *n = PyLong_FromSsize_t(tokens);
    PyObject *raw = s != NULL && e != NULL && n != NULL ? new_tuple_of(raw_type, RAW_ITEMS) : NULL;
    if (raw == NULL) {
        Py_XDECREF(s);
        Py_XDECREF(e);
        Py_XDECREF(n);
        return NULL;
    }
    PyTuple_SET_ITEM(raw, 0, s);
    PyTuple_SET_ITEM(raw, 1, e);
    PyTuple_SET_ITEM(raw, 2, n);
    PyTuple_SET_ITEM(raw, 3, Py_NewRef(first));
    PyTuple_SET_ITEM(raw, 4, Py_NewRef(oversize ? Py_True : Py_False));
    PyTuple_SET_ITEM(raw, 5, Py_NewRef(sticky_end ? Py_True : Py_False));
    PyTuple_SET_ITEM(raw, 6, Py_NewRef(partial ? Py_True : Py_False));
    return raw;
}

/* Checks that ``type`` makes RawChunks as raw_new does (a named tuple of seven items). */
static int
check_raw_type(PyObject *type)
{
    if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "raw_type must be a named tuple class (RawChunk)");
        return -1;
    }
    return 0;
}


static int
names_open(Packer *P)
{
    P->n_start = PyUnicode_InternFromString("start");
    P->n_end = PyUnicode_InternFromString("end");
    P->n_tokens = PyUnicode_InternFromString("tokens");
    P->n_first = PyUnicode_InternFromString("first");
    P->n_oversize = PyUnicode_InternFromString("oversize");
    P->n_sticky_end = PyUnicode_InternFromString("sticky_end");
    P->n_partial = PyUnicode_InternFromString("partial");
    return P->n_start && P->n_end && P->n_tokens && P->n_first && P->n_oversize && P->n_sticky_end && P->n_partial
               ? 0
               : -1;
}

static void
names_close(Packer *P)
{
    Py_XDECREF(P->n_start);
    Py_XDECREF(P->n_end);
    Py_XDECREF(P->n_tokens);
    Py_XDECREF(P->n_first);
    Py_XDECREF(P->n_oversize);
    Py_XDECREF(P->n_sticky_end);
    Py_XDECREF(P->n_partial);
}

/* A chunk's fields: read from its items when it is exactly a RawChunk, else by name (a
 * subclass may compute them). */
static int
raw_read(Packer *P, PyObject *c, RawFields *f)
{
    f->first = NULL;
    if (Py_IS_TYPE(c, P->raw_type) && PyTuple_GET_SIZE(c) == RAW_ITEMS) {
        if (ssize_item_of(PyTuple_GET_ITEM(c, 0), &f->start) < 0 || ssize_item_of(PyTuple_GET_ITEM(c, 1), &f->end) < 0 ||
            ssize_item_of(PyTuple_GET_ITEM(c, 2), &f->tokens) < 0) {
            return -1;
        }
        if ((f->oversize = PyObject_IsTrue(PyTuple_GET_ITEM(c, 4))) < 0 ||
            (f->sticky_end = PyObject_IsTrue(PyTuple_GET_ITEM(c, 5))) < 0 ||
            (f->partial = PyObject_IsTrue(PyTuple_GET_ITEM(c, 6))) < 0) {
            return -1;
        }
        f->first = Py_NewRef(PyTuple_GET_ITEM(c, 3));
        return 0;
    }
    if (get_ssize(c, P->n_start, &f->start) < 0 || get_ssize(c, P->n_end, &f->end) < 0 ||
        get_ssize(c, P->n_tokens, &f->tokens) < 0) {
        return -1;
    }
    if ((f->oversize = get_truth(c, P->n_oversize)) < 0 || (f->sticky_end = get_truth(c, P->n_sticky_end)) < 0 ||
        (f->partial = get_truth(c, P->n_partial)) < 0) {
        return -1;
    }
    f->first = PyObject_GetAttr(c, P->n_first);
    return f->first == NULL ? -1 : 0;
}

/* Engine._span: the exact count of [a, c) (by the engine, which finds the encoding that
 * covers it). */
static Py_ssize_t
span_count(Packer *P, Py_ssize_t a, Py_ssize_t c)
{
    PyObject *args[2] = {PyLong_FromSsize_t(a), PyLong_FromSsize_t(c)};
    PyObject *got = NULL;
    if (args[0] != NULL && args[1] != NULL) {
        got = PyObject_Vectorcall(P->span, args, 2, NULL);
    }
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    return as_count(got);
}

/* Engine._joined_count: the exact count of ``head`` joined with the ``tokens``-long
 * stretch [start, end) after it. */
static Py_ssize_t
joined_count(Packer *P, const RawFields *head, Py_ssize_t start, Py_ssize_t end, Py_ssize_t tokens)
{
    Py_ssize_t found = find_additive(P, start, 1);
    if (found == -2) {
        return -1;
    }
    if (found == start) {
        return head->tokens + tokens;
    }
    return span_count(P, head->start, end);
}

/* Appends ``made`` to engine.out (a new reference, stolen), or puts it in place of the
 * last chunk there. */
static int
emit(Packer *P, PyObject *made, int replace)
{
    if (made == NULL) {
        return -1;
    }
    if (replace) {
        Py_ssize_t count = PyList_GET_SIZE(P->out);
        if (count == 0) {
            Py_DECREF(made);
            PyErr_SetString(PyExc_RuntimeError, "no open chunk to replace");
            return -1;
        }
        return PyList_SetItem(P->out, count - 1, made);
    }
    int failed = PyList_Append(P->out, made);
    Py_DECREF(made);
    return failed;
}

static int pack_level(Packer *P, Level *L, PyObject *parts, const Tmpl *t, PyObject *template, PyObject *light,
                      PyObject *lead);

/* _prose.boundaries, the word level and above here, the levels below by the function:
 * cuts of the prose section [a, b) after ``a`` (which ``cuts`` holds first), and the
 * level they are of in *found. */
static int
prose_cuts(Packer *P, Py_ssize_t a, Py_ssize_t b, PyObject *state, Cuts *cuts, long *found)
{
    long level = 0;
    int native = 1;
    PyObject *level_obj = NULL; /* what the function gets, when it is asked */
    if (PyLong_Check(state)) {
        int overflow;
        level = PyLong_AsLongAndOverflow(state, &overflow);
        if (level == -1 && PyErr_Occurred()) {
            return -1;
        }
        native = !overflow && level >= 0 && level <= 4;
        if (!native) {
            level_obj = Py_NewRef(state);
        }
    }
    if (native) {
        for (long index = level; index <= 4; index++) {
            Py_ssize_t from = a;
            if (level_candidates(&P->scan, a, b, (int)index, cuts, &from) < 0) {
                return -1;
            }
            if (cuts->len > 1) {
                *found = index;
                return 0;
            }
        }
        level_obj = PyLong_FromLong(5);
        if (level_obj == NULL) {
            return -1;
        }
    }
    PyObject *args[4] = {P->text, PyLong_FromSsize_t(a), PyLong_FromSsize_t(b), level_obj};
    PyObject *got = NULL;
    if (args[1] != NULL && args[2] != NULL) {
        got = PyObject_Vectorcall(P->boundaries, args, 4, NULL);
    }
    Py_XDECREF(args[1]);
    Py_XDECREF(args[2]);
    Py_DECREF(level_obj);
    if (got == NULL) {
        return -1;
    }
    int ok = -1;
    Ints more = {0};
    if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2) {
        PyErr_SetString(PyExc_TypeError, "boundaries must give (level, cuts)");
        goto done;
    }
    *found = PyLong_AsLong(PyTuple_GET_ITEM(got, 0));
    if (*found == -1 && PyErr_Occurred()) {
        goto done;
    }
    if (ints_open(&more, PyTuple_GET_ITEM(got, 1), "cuts") < 0) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < more.len; i++) {
        long long v = ints_at(&more, i);
        if (v == -1 && PyErr_Occurred()) {
            goto done;
        }
        if (v <= a || v >= b || v <= cuts->items[cuts->len - 1]) {
            PyErr_SetString(PyExc_ValueError, "boundaries gave a cut outside the section or out of order");
            goto done;
        }
        if (push(cuts, v) < 0) {
            goto done;
        }
    }
    ok = 0;
done:
    ints_close(&more);
    Py_DECREF(got);
    return ok;
}

/* _meta(section): the section itself when it has neither splitter nor state, else its
 * kind, language and path alone (no splitter or state that could hold a whole parse). */
static PyObject *
section_meta(Packer *P, PyObject *section)
{
    if (!PyTuple_Check(section) || PyTuple_GET_SIZE(section) < SECTION_ITEMS) {
        PyErr_SetString(PyExc_TypeError, "parts must be Sections");
        return NULL;
    }
    if (PyTuple_GET_ITEM(section, SECTION_SPLITTER) == Py_None && PyTuple_GET_ITEM(section, SECTION_STATE) == Py_None) {
        return Py_NewRef(section);
    }
    PyObject *light = new_tuple_of(P->section_type, SECTION_ITEMS);
    if (light == NULL) {
        return NULL;
    }
    for (int f = 0; f < SECTION_ITEMS; f++) {
        PyObject *v = f == SECTION_SPLITTER || f == SECTION_STATE ? Py_None
                      : f == SECTION_PARTIAL || f == SECTION_STICKY ? Py_False
                                                                    : PyTuple_GET_ITEM(section, f);
        PyTuple_SET_ITEM(light, f, Py_NewRef(v));
    }
    return light;
}

/* The metadata of a chunk that starts with the section [a, b) like ``t`` (``section``
 * its Section, or NULL when it has a splitter). */
static PyObject *
first_of(Packer *P, Py_ssize_t a, Py_ssize_t b, const Tmpl *t, PyObject *section)
{
    if (section != NULL) {
        return section_meta(P, section);
    }
    return light_meta(P, a, b, t);
}

/* Cuts the section (not prose) with its splitter, as Engine._place does: into ``L``'s
 * edges, with its parts (NULL when they are uniform, like *template). Nothing in ``L``
 * when the section cannot be cut. 1 (and nothing in ``L``) when the splitter gave one
 * part that refines the section: it is in *template. */
static int
split_section(Packer *P, PyObject *section, const Tmpl *t, Level *L, PyObject **parts, PyObject **template)
{
    *parts = NULL;
    *template = NULL;
    if (t->splitter == Py_None) {
        return 0;
    }
    PyObject *got = NULL;
    if (J.splitter_type != NULL && Py_IS_TYPE(t->splitter, J.splitter_type) && !json_string_state(P->text, t->state)) {
        /* JSONSplitter.split is native.json_split: called here without its Python
         * frame (so a JSONSplitter.split patched on the class is not asked). A string
         * and its pieces go to JSONSplitter.split_edges below: their cuts as offsets. */
        got = json_split_impl(t->splitter, P->text, section);
        if (got == NULL) {
            return -1;
        }
        goto parts;
    }
    static PyObject *n_split_edges = NULL;
    if (n_split_edges == NULL && (n_split_edges = PyUnicode_InternFromString("split_edges")) == NULL) {
        return -1;
    }
    PyObject *cut;
    /* No AttributeError made and dropped for a splitter without split_edges. */
    if (optional_attr(t->splitter, n_split_edges, &cut) < 0) {
        return -1;
    }
    if (cut != NULL) {
        PyObject *args[2] = {P->text, section};
        PyObject *found = PyObject_Vectorcall(cut, args, 2, NULL);
        Py_DECREF(cut);
        if (found == NULL) {
            return -1;
        }
        if (found != Py_None) {
            PyObject *pair = PySequence_Tuple(found);
            Py_DECREF(found);
            if (pair == NULL) {
                return -1;
            }
            if (PyTuple_GET_SIZE(pair) != 2) {
                Py_DECREF(pair);
                PyErr_SetString(PyExc_ValueError, "split_edges must give (edges, template)");
                return -1;
            }
            int failed = ints_open(&L->edges, PyTuple_GET_ITEM(pair, 0), "edges");
            if (!failed) {
                *template = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
            }
            Py_DECREF(pair);
            return failed;
        }
        Py_DECREF(found);
    }
    PyObject *args[3] = {t->splitter, P->text, section};
    PyObject *name = PyUnicode_InternFromString("split");
    got = name == NULL ? NULL : PyObject_VectorcallMethod(name, args, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_XDECREF(name);
    if (got == NULL) {
        return -1;
    }
parts:
    *parts = PySequence_Tuple(got); /* a copy: the callbacks run Python code */
    Py_DECREF(got);
    if (*parts == NULL) {
        return -1;
    }
    Py_ssize_t k = PyTuple_GET_SIZE(*parts);
    if (k == 1) {
        /* One part: the same span seen another way (Engine._refines), placed in the
         * section's stead. */
        PyObject *only = PyTuple_GET_ITEM(*parts, 0);
        if (PyTuple_Check(only) && PyTuple_GET_SIZE(only) >= SECTION_ITEMS &&
            PyTuple_GET_ITEM(only, SECTION_SPLITTER) != Py_None &&
            (PyTuple_GET_ITEM(only, SECTION_SPLITTER) != t->splitter ||
             Py_TYPE(PyTuple_GET_ITEM(only, SECTION_STATE)) != Py_TYPE(t->state))) {
            Py_ssize_t a, b, a0, b0;
            if (ssize_item_of(PyTuple_GET_ITEM(only, SECTION_START), &a) < 0 ||
                ssize_item_of(PyTuple_GET_ITEM(only, SECTION_END), &b) < 0 ||
                ssize_item_of(PyTuple_GET_ITEM(section, SECTION_START), &a0) < 0 ||
                ssize_item_of(PyTuple_GET_ITEM(section, SECTION_END), &b0) < 0) {
                Py_CLEAR(*parts);
                return -1;
            }
            if (a == a0 && b == b0) {
                *template = Py_NewRef(only);
                Py_CLEAR(*parts);
                return 1;
            }
        }
    }
    if (k < 2) {
        Py_CLEAR(*parts);
        return 0;
    }
    int64_t *edges = PyMem_New(int64_t, k + 1);
    if (edges == NULL) {
        Py_CLEAR(*parts);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i <= k; i++) {
        PyObject *part = PyTuple_GET_ITEM(*parts, i < k ? i : k - 1);
        Py_ssize_t at;
        if (!PyTuple_Check(part) || PyTuple_GET_SIZE(part) < SECTION_ITEMS) {
            PyErr_SetString(PyExc_TypeError, "parts must be Sections");
            at = -1;
        }
        else if (ssize_item_of(PyTuple_GET_ITEM(part, i < k ? SECTION_START : SECTION_END), &at) < 0) {
            at = -1;
        }
        if (at == -1 && PyErr_Occurred()) {
            PyMem_Free(edges);
            Py_CLEAR(*parts);
            return -1;
        }
        edges[i] = at;
    }
    L->edges.items = edges;
    L->edges.width = 8;
    L->edges.len = k + 1;
    L->owned = edges;
    return 0;
}

/* Engine._place for the section [a, b) like ``t`` (``section`` its Section, or NULL for
 * a uniform prose part), the view covering it: emitted whole if it fits (joining
 * ``lead`` if it can), else cut (prose at its highest level with cuts, here; anything
 * else by its splitter) and packed. */
static int place_section_inner(Packer *P, Py_ssize_t a, Py_ssize_t b, const Tmpl *t, PyObject *section,
                               PyObject *lead);

static int
place_section(Packer *P, Py_ssize_t a, Py_ssize_t b, const Tmpl *t, PyObject *section, PyObject *lead)
{
    /* Each level of a descent is a C frame here: Python's recursion limit bounds them
     * (a RecursionError, as through engine._place, rather than a stack overflow). */
    if (Py_EnterRecursiveCall(" while placing a section")) {
        return -1;
    }
    int ok = place_section_inner(P, a, b, t, section, lead);
    Py_LeaveRecursiveCall();
    return ok;
}

static int
place_section_inner(Packer *P, Py_ssize_t a, Py_ssize_t b, const Tmpl *t, PyObject *section, PyObject *lead)
{
    if (a < 0 || a > b || b > PyUnicode_GET_LENGTH(P->text)) {
        /* (a splitter's part past the text: the scans below read the text in place) */
        PyErr_Format(PyExc_IndexError, "a part [%zd, %zd) outside the text of %zd characters", a, b,
                     PyUnicode_GET_LENGTH(P->text));
        return -1;
    }
    Py_ssize_t budget = P->budget, n = -1;
    /* (no range fits that holds more characters than budget tokens of the longest token) */
    int cannot_fit = P->max_chars == 0 || budget <= PY_SSIZE_T_MAX / P->max_chars ? b - a > budget * P->max_chars : 0;
    if (!cannot_fit && (n = exact(P, a, b)) < 0) {
        return -1;
    }
    if (n >= 0 && n <= budget) {
        if (lead != NULL) {
            RawFields head;
            if (raw_read(P, lead, &head) < 0) {
                Py_XDECREF(head.first);
                return -1;
            }
            Py_ssize_t total = joined_count(P, &head, a, b, n);
            if (total < 0) {
                Py_DECREF(head.first);
                return -1;
            }
            if (total <= budget) {
                PyObject *made =
                    raw_new(P->raw_type, head.start, b, total, head.first, 0, t->sticky, head.partial || t->partial);
                Py_DECREF(head.first);
                return emit(P, made, 1);
            }
            Py_DECREF(head.first);
        }
        int markdown = PyUnicode_Check(t->kind) && PyUnicode_CompareWithASCIIString(t->kind, "markdown") == 0;
        if (lead == NULL || (!markdown && !is_flat(t->state)) || t->splitter == Py_None) {
            /* Fits alone: whole (a fenced block that fits is never cut for a heading; a
             * flat run is, so that its first parts fill the chunk before it). */
            PyObject *first = first_of(P, a, b, t, section);
            if (first == NULL) {
                return -1;
            }
            PyObject *made = raw_new(P->raw_type, a, b, n, first, 0, t->sticky, t->partial);
            Py_DECREF(first);
            return emit(P, made, 0);
        }
    }
    int ok = -1;
    long found = -1;
    Cuts cuts = {0};
    PyObject *state = NULL, *light = NULL, *parts = NULL, *template = NULL;
    Level L = {0};
    Tmpl sub = {0};
    if (prose_part(P, t)) {
        if (push(&cuts, a) < 0 || prose_cuts(P, a, b, t->state, &cuts, &found) < 0) {
            goto done;
        }
        if (cuts.len >= 2) {
            if (push(&cuts, b) < 0 || (state = PyLong_FromLong(found + 1)) == NULL) {
                goto done;
            }
            sub = (Tmpl){t->splitter, state, t->kind, t->language, t->path, t->partial, 0};
            L.edges.items = cuts.items;
            L.edges.width = 8;
            L.edges.len = cuts.len;
        }
    }
    else {
        int split = split_section(P, section, t, &L, &parts, &template);
        if (split < 0) {
            goto done;
        }
        if (split == 1) {
            /* ``template`` refines the section: placed in its stead. */
            Tmpl refined;
            if (tmpl_of(template, &refined) == 0) {
                ok = place_section(P, a, b, &refined, template, lead);
            }
            goto done;
        }
        /* (the template is read only when there are parts to pack, as in Engine._place) */
        if (L.edges.len >= 3 && template != NULL) {
            if (!PyTuple_Check(template) || PyTuple_GET_SIZE(template) < SECTION_ITEMS) {
                PyErr_SetString(PyExc_TypeError, "template must be a Section");
                goto done;
            }
            if (tmpl_of(template, &sub) < 0) {
                goto done;
            }
        }
        else if (parts != NULL) {
            sub = *t;
        }
    }
    if (L.edges.len < 3) {
        if (n < 0 && (n = count_fresh(P, a, b)) < 0) {
            goto done;
        }
        PyObject *first = first_of(P, a, b, t, section);
        if (first == NULL) {
            goto done;
        }
        PyObject *made = raw_new(P->raw_type, a, b, n, first, n > budget, 0, t->partial);
        Py_DECREF(first);
        ok = emit(P, made, 0);
        goto done;
    }
    L.k = L.edges.len - 1;
    if (template != NULL) {
        light = section_meta(P, template);
    }
    else if (parts != NULL) {
        light = section_meta(P, section);
    }
    else {
        light = light_meta(P, a, b, &sub);
    }
    if (light != NULL) {
        ok = pack_level(P, &L, parts, &sub, parts != NULL ? section : template, light, lead);
    }
done:
    Py_XDECREF(state);
    Py_XDECREF(light);
    Py_XDECREF(parts);
    Py_XDECREF(template);
    PyMem_Free(cuts.items);
    PyMem_Free(L.owned);
    ints_close(&L.edges);
    return ok;
}

/* A uniform part: ``template`` with the span of part ``i`` (as Engine._pack's part()). */
static PyObject *
uniform_part(Packer *P, Level *L, PyObject *template, Py_ssize_t i)
{
    Py_ssize_t a = edge(L, i), b = edge(L, i + 1);
    if ((a == -1 || b == -1) && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *args[8] = {PyLong_FromSsize_t(a), PyLong_FromSsize_t(b)};
    if (args[0] == NULL || args[1] == NULL) {
        Py_XDECREF(args[0]);
        Py_XDECREF(args[1]);
        return NULL;
    }
    for (int f = 2; f < 8; f++) {
        args[f] = PyTuple_GET_ITEM(template, f); /* borrowed */
    }
    PyObject *part = PyObject_Vectorcall((PyObject *)Py_TYPE(template), args, 8, NULL);
    Py_DECREF(args[0]);
    Py_DECREF(args[1]);
    return part;
}

/* Part ``i`` does not fit (after ``lead``, or at all): it is cut, here (given ``prose``
 * to pack), else by engine._place. */
static int
place_part(Packer *P, Level *L, PyObject *parts, const Tmpl *t, PyObject *template, Py_ssize_t i, PyObject *lead)
{
    if (parts == NULL && prose_part(P, t)) {
        Py_ssize_t a = edge(L, i), b = edge(L, i + 1);
        if ((a == -1 || b == -1) && PyErr_Occurred()) {
            return -1;
        }
        Tmpl part = *t;
        part.sticky = 0; /* (part() makes no sticky part) */
        return place_section(P, a, b, &part, NULL, lead);
    }
    if (parts == NULL && template == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a uniform part without its template");
        return -1;
    }
    PyObject *section = parts == NULL ? uniform_part(P, L, template, i) : Py_NewRef(PyTuple_GET_ITEM(parts, i));
    if (section == NULL) {
        return -1;
    }
    if (P->prose_type != NULL && PyTuple_Check(section) && PyTuple_GET_SIZE(section) >= SECTION_ITEMS) {
        Tmpl part;
        Py_ssize_t a, b;
        int failed = tmpl_of(section, &part) < 0 || ssize_item_of(PyTuple_GET_ITEM(section, SECTION_START), &a) < 0 ||
                     ssize_item_of(PyTuple_GET_ITEM(section, SECTION_END), &b) < 0;
        if (failed || (a >= P->lo && b <= P->hi && a < b)) {
            /* (a part the view does not cover goes to engine._place, which encodes it) */
            failed = failed || place_section(P, a, b, &part, section, lead) < 0;
            Py_DECREF(section);
            return failed ? -1 : 0;
        }
    }
    PyObject *call[3] = {section, P->view, lead != NULL ? lead : Py_None};
    PyObject *got = PyObject_Vectorcall(P->place, call, 3, NULL);
    Py_DECREF(section);
    if (got == NULL) {
        return -1;
    }
    Py_DECREF(got);
    return 0;
}

/* Whether part ``i`` (of ``parts``, or like ``t`` when they are uniform) is flat. */
static int
part_flat(PyObject *parts, const Tmpl *t, Py_ssize_t i)
{
    return is_flat(parts == NULL ? t->state : PyTuple_GET_ITEM(PyTuple_GET_ITEM(parts, i), SECTION_STATE));
}

/* Engine._pack's loop over the parts of ``L`` (``parts`` their Sections, or NULL when
 * they are uniform: like ``t``, whose Section is ``template`` when it came from Python). */
static int
pack_level(Packer *P, Level *L, PyObject *parts, const Tmpl *t, PyObject *template, PyObject *light, PyObject *lead)
{
    Py_ssize_t k = L->k;
    int ok = -1;
    PyObject *open = NULL, *first = NULL;
    RawFields of = {0};
    /* How many of the view's tokens end at or before each edge. */
    L->prefix_width = PyUnicode_GET_LENGTH(P->text) < INT32_MAX ? 4 : 8;
    L->prefix = L->prefix_width == 4 ? (void *)PyMem_New(int32_t, k + 1) : (void *)PyMem_New(Py_ssize_t, k + 1);
    if (L->prefix == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t e = 0; e <= k; e++) {
        Py_ssize_t at = edge(L, e);
        if (at == -1 && PyErr_Occurred()) {
            goto done;
        }
        Py_ssize_t before = ends_before(P, at);
        if (before < 0) {
            goto done;
        }
        if (L->prefix_width == 4) {
            ((int32_t *)L->prefix)[e] = (int32_t)before;
        }
        else {
            ((Py_ssize_t *)L->prefix)[e] = before;
        }
    }
    Py_ssize_t budget = P->budget;
    int uniform = parts == NULL;
    if (lead != NULL) {
        open = Py_NewRef(lead);
    }
    Py_ssize_t i = 0;
    while (i < k) {
        Py_ssize_t base, origin;
        int joined;
        if (open != NULL) {
            Py_CLEAR(of.first);
            if (raw_read(P, open, &of) < 0) {
                goto done;
            }
            base = of.tokens;
            origin = of.start;
            first = Py_NewRef(of.first);
            Py_ssize_t at = edge(L, i);
            if (at == -1 && PyErr_Occurred()) {
                goto done;
            }
            Py_ssize_t found = find_additive(P, at, 1);
            if (found == -2) {
                goto done;
            }
            joined = found == at;
        }
        else {
            base = 0;
            origin = edge(L, i);
            if (origin == -1 && PyErr_Occurred()) {
                goto done;
            }
            first = uniform                  ? Py_NewRef(light)
                    : P->prose_type != NULL ? section_meta(P, PyTuple_GET_ITEM(parts, i))
                                            : PyObject_CallOneArg(P->meta, PyTuple_GET_ITEM(parts, i));
            if (first == NULL) {
                goto done;
            }
            joined = -1;
        }
        Py_ssize_t j = bisect_prefix(L, prefix_at(L, i) + budget - base, i + 1, k + 1) - 1;
        Py_ssize_t n = -1;
        int stepped_back = 0;
        while (j > i) {
            n = size(P, L, i, j, joined, base, origin);
            if (n < 0) {
                goto done;
            }
            if (n <= budget) {
                break;
            }
            /* Over: step back at least one part, more if the estimate was low. */
            Py_ssize_t low_by = n - (base + prefix_at(L, j) - prefix_at(L, i));
            Py_ssize_t back = bisect_prefix(L, prefix_at(L, i) + budget - base - low_by, i + 1, k + 1) - 1;
            j = back < j - 1 ? back : j - 1;
            stepped_back = 1;
        }
        if (stepped_back && j > i) {
            /* The correction may have stepped back too far: take the next parts back
             * while they still fit. */
            for (int step = 0; step < 4 && j < k; step++) {
                Py_ssize_t m = size(P, L, i, j + 1, joined, base, origin);
                if (m < 0) {
                    goto done;
                }
                if (m > budget) {
                    break;
                }
                j += 1;
                n = m;
            }
        }
        if (!uniform && j > i + 1) {
            int sticky = section_truth(PyTuple_GET_ITEM(parts, j - 1), SECTION_STICKY);
            if (sticky < 0) {
                goto done;
            }
            if (sticky) {
                /* A sticky part (a heading) opens the next chunk instead of ending this one. */
                j -= 1;
                if ((n = size(P, L, i, j, joined, base, origin)) < 0) {
                    goto done;
                }
            }
        }
        if (j <= i) {
            if (open != NULL && !of.sticky_end && !part_flat(parts, t, i)) {
                Py_CLEAR(open);
                Py_CLEAR(first);
                continue;
            }
            /* The part does not fit: cut it (its first pieces join a heading that must
             * not end a chunk). */
            if (place_part(P, L, parts, t, template, i, open) < 0) {
                goto done;
            }
            Py_ssize_t count = PyList_GET_SIZE(P->out);
            if (count == 0) {
                PyErr_SetString(PyExc_RuntimeError, "engine._place emitted nothing");
                goto done;
            }
            PyObject *last = Py_NewRef(PyList_GET_ITEM(P->out, count - 1));
            RawFields lf = {0};
            int failed = raw_read(P, last, &lf);
            Py_XDECREF(lf.first);
            Py_CLEAR(open);
            if (failed < 0) {
                Py_DECREF(last);
                goto done;
            }
            if (lf.oversize) {
                Py_DECREF(last);
            }
            else {
                open = last;
            }
            Py_CLEAR(first);
            i += 1;
            continue;
        }
        int sticky_end = 0, partial = open != NULL && of.partial;
        if (uniform) {
            partial = partial || t->partial;
        }
        else {
            if ((sticky_end = section_truth(PyTuple_GET_ITEM(parts, j - 1), SECTION_STICKY)) < 0) {
                goto done;
            }
            if (!partial && (partial = section_truth(PyTuple_GET_ITEM(parts, i), SECTION_PARTIAL)) < 0) {
                goto done;
            }
            if (!partial && (partial = section_truth(PyTuple_GET_ITEM(parts, j - 1), SECTION_PARTIAL)) < 0) {
                goto done;
            }
        }
        Py_ssize_t end = edge(L, j);
        if (end == -1 && PyErr_Occurred()) {
            goto done;
        }
        PyObject *made = raw_new(P->raw_type, origin, end, n, first, 0, sticky_end, partial);
        Py_CLEAR(first);
        if (made == NULL) {
            goto done;
        }
        if (emit(P, Py_NewRef(made), open != NULL) < 0) {
            Py_DECREF(made);
            goto done;
        }
        Py_CLEAR(open);
        /* Before a flat part that did not fit, the chunk stays open: its first parts
         * fill it (as if they stood here). */
        if (sticky_end || (j < k && part_flat(parts, t, j))) {
            open = made;
        }
        else {
            Py_DECREF(made);
        }
        i = j;
    }
    ok = 0;
done:
    Py_XDECREF(of.first);
    Py_XDECREF(open);
    Py_XDECREF(first);
    PyMem_Free(L->prefix);
    L->prefix = NULL;
    return ok;
}

static int
get_ssize_named(PyObject *obj, const char *name, Py_ssize_t *value)
{
    PyObject *got = PyObject_GetAttrString(obj, name);
    if (got == NULL) {
        return -1;
    }
    int failed = ssize_item_of(got, value);
    Py_DECREF(got);
    return failed;
}

/* ``j`` over ``text`` and a junction table (``classes``: filled for its characters). */
static int
junction_open(Junction *j, PyObject *text, int rule, Py_buffer *classes)
{
    if (rule != RULE_O200K && rule != RULE_CL100K) {
        PyErr_Format(PyExc_ValueError, "no junction rule %d", rule);
        return -1;
    }
    if (classes->len < CODE_POINTS) {
        PyErr_SetString(PyExc_ValueError, "the class table must hold a byte per code point");
        return -1;
    }
    *j = (Junction){PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text),
                    (const unsigned char *)classes->buf, 0};
    return 0;
}

/* The engine's state the packing reads and the view's ends; ``prose`` (None, or
 * (ProseSplitter, prose flag table, boundaries, max_token_chars)) lets prose descents be
 * made here. */
static int
packer_open(Packer *P, PyObject *engine, PyObject *view, int rule, Py_buffer *classes, PyObject *prose)
{
    PyObject *sizer = NULL;
    PyObject *ends = NULL, *seams = NULL;
    int ok = -1;
    P->view = view;
    if (names_open(P) < 0) {
        goto done;
    }
    P->text = PyObject_GetAttrString(engine, "text");
    if (P->text == NULL) {
        goto done;
    }
    if (!PyUnicode_Check(P->text)) {
        PyErr_SetString(PyExc_TypeError, "engine.text must be a str");
        goto done;
    }
    if (junction_open(&P->junction, P->text, rule, classes) < 0) {
        goto done;
    }
    P->rule = rule;
    if (get_ssize_named(engine, "budget", &P->budget) < 0) {
        goto done;
    }
    if ((P->out = PyObject_GetAttrString(engine, "out")) == NULL ||
        (P->short_memo = PyObject_GetAttrString(engine, "_short")) == NULL ||
        (P->head = PyObject_GetAttrString(engine, "_head")) == NULL ||
        (P->tail = PyObject_GetAttrString(engine, "_tail")) == NULL ||
        (P->place = PyObject_GetAttrString(engine, "_place")) == NULL ||
        (P->span = PyObject_GetAttrString(engine, "_span")) == NULL ||
        (sizer = PyObject_GetAttrString(engine, "sizer")) == NULL ||
        (P->count_text = PyObject_GetAttrString(sizer, "count")) == NULL) {
        goto done;
    }
    if (!PyList_Check(P->out) || !PyDict_Check(P->head) || !PyDict_Check(P->tail) || !PyDict_Check(P->short_memo)) {
        PyErr_SetString(PyExc_TypeError,
                        "engine.out must be a list, engine._head, engine._tail and engine._short dicts");
        goto done;
    }
    if (get_ssize_named(view, "lo", &P->lo) < 0 || get_ssize_named(view, "hi", &P->hi) < 0) {
        goto done;
    }
    if ((ends = PyObject_GetAttrString(view, "ends")) == NULL || (seams = PyObject_GetAttrString(view, "seams")) == NULL) {
        goto done;
    }
    if (ints_open(&P->ends, ends, "view.ends") < 0) {
        goto done;
    }
    if (ints_open(&P->seams, seams, "view.seams") < 0) {
        goto done;
    }
    if (prose != Py_None) {
        PyObject *prose_type, *flag_table, *boundaries, *max_chars;
        if (!PyArg_ParseTuple(prose, "OOOO;prose must be (splitter class, flag table, boundaries, max chars)",
                              &prose_type, &flag_table, &boundaries, &max_chars)) {
            goto done;
        }
        if (!PyType_Check(prose_type)) {
            PyErr_SetString(PyExc_TypeError, "prose[0] must be the prose splitter's class");
            goto done;
        }
        if (ssize_item_of(max_chars, &P->max_chars) < 0) {
            goto done;
        }
        if (P->max_chars < 0 || P->budget < 0) {
            PyErr_SetString(PyExc_ValueError, "the budget and the most characters a token holds must not be negative");
            goto done;
        }
        if (PyObject_GetBuffer(flag_table, &P->flag_cache, PyBUF_SIMPLE) < 0) {
            goto done;
        }
        P->has_flag_cache = 1;
        if (P->flag_cache.len < CODE_POINTS * 2 || (uintptr_t)P->flag_cache.buf % 2 != 0) {
            PyErr_SetString(PyExc_ValueError, "the flag table must hold two bytes per code point");
            goto done;
        }
        P->scan = (Scan){PyUnicode_KIND(P->text), PyUnicode_DATA(P->text), PyUnicode_GET_LENGTH(P->text),
                         (const uint16_t *)P->flag_cache.buf, 0};
        P->prose_type = prose_type;
        P->boundaries = boundaries;
    }
    ok = 0;
done:
    Py_XDECREF(sizer);
    Py_XDECREF(ends);
    Py_XDECREF(seams);
    return ok;
}

static void
packer_close(Packer *P)
{
    Py_XDECREF(P->text);
    Py_XDECREF(P->out);
    Py_XDECREF(P->short_memo);
    Py_XDECREF(P->count_text);
    Py_XDECREF(P->head);
    Py_XDECREF(P->tail);
    Py_XDECREF(P->place);
    Py_XDECREF(P->span);
    ints_close(&P->ends);
    ints_close(&P->seams);
    if (P->has_flag_cache) {
        PyBuffer_Release(&P->flag_cache);
    }
    names_close(P);
}


PyDoc_STRVAR(pack_doc,
"pack(engine, edges, parts, template, view, lead, light, meta, raw_type, rule, classes, prose=None)\n\n"
"Engine._pack for a tokenizer whose additive positions ``rule`` knows (see _kernels.additive;\n"
"``classes`` is its junction table, filled for the text):\n"
"packs the parts between ``edges`` greedily into ``engine.out``, with every count exact\n"
"from ``view`` (which covers them), and hands a part that does not fit to\n"
"``engine._place``. ``parts`` are the parts' Sections, or None when they are uniform\n"
"(like ``template`` but for their spans); ``light`` is the template's metadata and\n"
"``meta`` makes a part's; ``raw_type`` is RawChunk (a named tuple). With ``prose``\n"
"(the ProseSplitter class, the prose flag table, _prose.boundaries and the most\n"
"characters a token holds), a prose part that does not fit is cut and packed here,\n"
"as engine._place would, level by level, without returning to Python.");

static PyObject *
pack(PyObject *self, PyObject *args)
{
    PyObject *engine, *edges_obj, *parts_obj, *template, *view, *lead, *light, *meta, *raw_type;
    PyObject *prose = Py_None;
    int rule;
    Py_buffer cache;
    if (!PyArg_ParseTuple(args, "OOOO!OOOOOiy*|O:pack", &engine, &edges_obj, &parts_obj, &PyTuple_Type, &template,
                          &view, &lead, &light, &meta, &raw_type, &rule, &cache, &prose)) {
        return NULL;
    }
    Packer P;
    memset(&P, 0, sizeof(P));
    Level L;
    memset(&L, 0, sizeof(L));
    PyObject *parts = NULL, *result = NULL;
    Tmpl t;
    if (PyTuple_GET_SIZE(template) < SECTION_ITEMS) {
        PyErr_SetString(PyExc_TypeError, "template must be a Section");
        goto done;
    }
    if (check_raw_type(raw_type) < 0) {
        goto done;
    }
    P.raw_type = (PyTypeObject *)raw_type;
    P.section_type = Py_TYPE(template);
    P.meta = meta;
    if (packer_open(&P, engine, view, rule, &cache, prose) < 0) {
        goto done;
    }
    if (ints_open(&L.edges, edges_obj, "edges") < 0) {
        goto done;
    }
    L.k = L.edges.len - 1;
    if (L.k < 1) {
        PyErr_SetString(PyExc_ValueError, "pack needs two edges or more");
        goto done;
    }
    if (parts_obj != Py_None) {
        parts = PySequence_Tuple(parts_obj); /* a copy: the callbacks run Python code */
        if (parts == NULL) {
            goto done;
        }
        if (PyTuple_GET_SIZE(parts) != L.k) {
            PyErr_SetString(PyExc_ValueError, "parts and edges disagree");
            goto done;
        }
        for (Py_ssize_t i = 0; i < L.k; i++) { /* (part_flat reads a part's state in place) */
            PyObject *part = PyTuple_GET_ITEM(parts, i);
            if (!PyTuple_Check(part) || PyTuple_GET_SIZE(part) < SECTION_ITEMS) {
                PyErr_SetString(PyExc_TypeError, "parts must be Sections");
                goto done;
            }
        }
    }
    if (tmpl_of(template, &t) < 0) {
        goto done;
    }
    if (pack_level(&P, &L, parts, &t, template, light, lead != Py_None ? lead : NULL) == 0) {
        result = Py_NewRef(Py_None);
    }
done:
    Py_XDECREF(parts);
    ints_close(&L.edges);
    packer_close(&P);
    PyBuffer_Release(&cache);
    return result;
}


static PyMethodDef native_methods[] = {
    {"pack", pack, METH_VARARGS, pack_doc},
    {"json_setup", json_setup, METH_VARARGS, json_setup_doc},
    {"json_split", (PyCFunction)(void (*)(void))json_split, METH_FASTCALL, json_split_doc},
    {"flat_setup", flat_setup, METH_O, flat_setup_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "sdk.chunking._native",
    "Native passes of the chunking engine (optional; pure-Python fallbacks give the same results).",
    0,
    native_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModule_Create(&native_module);
}
