/* The chunking engine's kernels: scans over a text's code units and over arrays of
 * integers, each with its reference in Python (named in each docstring) and a test
 * that the two agree. They take and return only bytes-like buffers, ints, tuples of
 * str and lists of ints: no Python object's layout is read, nothing calls back into
 * Python, and the module is built on the limited API (abi3) with multi-phase init.
 *
 * A text reaches a kernel as its code units (``_accel.units``): an ASCII str itself
 * (``kind`` 0: read in place), else a buffer of 1, 2 or 4 bytes per code point, the
 * narrowest that holds the text (its ``kind``), so offsets are the text's own offsets.
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* A str read in place (kind 8), a block of code points at a time: a text that is not
 * ASCII and whose units are not at hand is never copied whole (a copy of a megabyte of
 * text with one emoji in it would take four bytes a character). */
#define STR_KIND 8
#define SMALL_BLOCK 192 /* code points of a block held in place (for scans of a few) */

typedef struct {
    PyObject *str;
    Py_ssize_t n;
    Py_ssize_t lo, len; /* the block held: [lo, lo + len) */
    Py_ssize_t size;    /* code points a block holds */
    Py_ssize_t from, to; /* the range the scan reads (a block holds no more of the text) */
    Py_UCS4 *buf;       /* ``small``, or PyMem for a larger block */
    int failed;         /* a refill failed: its exception is set, and reads give 0x110000 */
    Py_UCS4 small[SMALL_BLOCK];
} Blocks;

static Py_UCS4
blocks_fill(Blocks *b, Py_ssize_t i)
{
    if (b->failed || i < 0 || i >= b->n) {
        b->failed = 1;
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_IndexError, "read outside the text");
        }
        return 0x110000;
    }
    if (b->buf == NULL) {
        b->buf = b->size <= SMALL_BLOCK ? b->small : PyMem_Malloc((size_t)b->size * sizeof(Py_UCS4));
        if (b->buf == NULL) {
            b->failed = 1;
            PyErr_NoMemory();
            return 0x110000;
        }
    }
    /* A third of the block before the code point asked (scans go both ways), none of
     * it outside the range the scan reads (where the code point is inside it). */
    Py_ssize_t lo = i > b->size / 3 ? i - b->size / 3 : 0;
    if (lo < b->from && i >= b->from) {
        lo = b->from;
    }
    Py_ssize_t hi = b->n - lo > b->size ? lo + b->size : b->n;
    if (hi > b->to && i < b->to) {
        hi = b->to;
    }
    PyObject *sub = PyUnicode_Substring(b->str, lo, hi);
    if (sub == NULL || PyUnicode_AsUCS4(sub, b->buf, b->size, 0) == NULL) {
        Py_XDECREF(sub);
        b->failed = 1;
        b->len = 0;
        return 0x110000;
    }
    Py_DECREF(sub);
    b->lo = lo;
    b->len = hi - lo;
    return b->buf[i - lo];
}

/* The code point at ``i`` of a text's units (a buffer need not be aligned). */
static inline Py_UCS4
unit_at(int kind, const void *data, Py_ssize_t i)
{
    if (kind == STR_KIND) {
        Blocks *b = (Blocks *)data;
        size_t k = (size_t)(i - b->lo);
        return k < (size_t)b->len ? b->buf[k] : blocks_fill(b, i);
    }
    if (kind == 2) {
        uint16_t v;
        memcpy(&v, (const char *)data + 2 * i, 2);
        return v;
    }
    if (kind == 4) {
        uint32_t v;
        memcpy(&v, (const char *)data + 4 * i, 4);
        return v;
    }
    return ((const unsigned char *)data)[i];
}

#define SCAN_READ(kind, data, i) unit_at((kind), (data), (i))
#define SCAN_OWN_KIND STR_KIND
#include "_scan.h"
#include "_prose.h"

/* A text's code units, from a buffer and its kind, or from an ASCII str (kind 0),
 * whose UTF-8 is its own storage: read in place, without a copy, or from any str
 * (kind 8), read a block at a time. */
typedef struct {
    Py_buffer view;
    int has_view;
    const void *data;
    Py_ssize_t n;
    int kind; /* 1, 2 or 4 bytes a code point, or STR_KIND */
    int ascii;
    Blocks blocks;
} Units;

#define BLOCK 16384 /* code points a block holds for a scan (64 KB) */

static int
units_open(Units *u, PyObject *obj, int kind)
{
    memset(u, 0, sizeof(*u));
    if (kind != 0 && kind != 1 && kind != 2 && kind != 4) {
        PyErr_SetString(PyExc_ValueError, "a text's kind is 0 (ASCII), 1, 2 or 4 bytes a code point");
        return -1;
    }
    if (PyUnicode_Check(obj)) {
        Py_ssize_t size;
        const char *utf8 = kind == 0 ? PyUnicode_AsUTF8AndSize(obj, &size) : NULL;
        if (utf8 == NULL || size != PyUnicode_GetLength(obj)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "a str's units are read in place only when it is ASCII (kind 0)");
            return -1;
        }
        u->ascii = 1;
        u->kind = 1;
        u->data = utf8;
        u->n = size;
        return 0;
    }
    if (PyObject_GetBuffer(obj, &u->view, PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    u->has_view = 1;
    Py_ssize_t width = kind == 0 ? 1 : kind;
    if (u->view.len % width != 0) {
        PyErr_SetString(PyExc_ValueError, "a text's units do not fill its kind's width");
        PyBuffer_Release(&u->view);
        return -1;
    }
    u->ascii = kind == 0;
    u->kind = kind == 0 ? 1 : kind;
    u->data = u->view.buf;
    u->n = u->view.len / width;
    return 0;
}

/* A text's units for a kernel that reads them through unit_at alone, which may take
 * any str as it is (kind 8, read ``block`` code points at a time). */
static int
units_open_read(Units *u, PyObject *obj, int kind, Py_ssize_t block)
{
    memset(u, 0, sizeof(*u));
    if (kind != STR_KIND) {
        return units_open(u, obj, kind);
    }
    if (!PyUnicode_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "kind 8 reads a str");
        return -1;
    }
    u->kind = STR_KIND;
    u->n = PyUnicode_GetLength(obj);
    u->blocks.str = obj;
    u->blocks.n = u->n;
    u->blocks.size = block;
    u->blocks.from = 0;
    u->blocks.to = u->n;
    u->data = &u->blocks;
    return u->n < 0 ? -1 : 0;
}

static void
units_close(Units *u)
{
    if (u->blocks.buf != u->blocks.small) {
        PyMem_Free(u->blocks.buf);
    }
    u->blocks.buf = NULL;
    if (u->has_view) {
        PyBuffer_Release(&u->view);
        u->has_view = 0;
    }
}

PyDoc_STRVAR(char_ends_doc,
"char_ends(text, ids, lengths, start, wide) -> bytes\n\n"
"The end of each token of ``text`` (a str) in characters, counted from ``start``, as machine\n"
"integers (8 bytes each when ``wide``, else 4): token ``ids`` (a sequence of ints, or a\n"
"buffer of 4-byte unsigned ints, its length read in bytes) with\n"
"UTF-8 ``lengths`` (a buffer of int32 indexed by id). A token that ends inside a\n"
"character's bytes ends after that character; ends past the text stop at its end.\n"
"The text is read as UTF-8 in place (the encoder that gave the ids made it).");

static PyObject *
char_ends(PyObject *self, PyObject *args)
{
    PyObject *text, *sequence;
    Py_buffer lengths;
    Py_ssize_t start;
    int wide;
    if (!PyArg_ParseTuple(args, "UOy*np:char_ends", &text, &sequence, &lengths, &start, &wide)) {
        return NULL;
    }
    /* The text's UTF-8, which the encoder that gave the ids made and the str keeps (an
     * ASCII str's own storage): read in place, no copy of the text in code points. */
    Py_ssize_t nbytes;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &nbytes);
    Py_ssize_t nchars = PyUnicode_GetLength(text);
    if (utf8 == NULL || nchars < 0) {
        PyBuffer_Release(&lengths);
        return NULL;
    }
    PyObject *result = NULL;
    PyObject *ids = NULL;
    /* A buffer of 4-byte ids (tiktoken's, or an array('I')) is read as it is, its
     * length taken from the view's length in bytes (tiktoken's buffer reports its
     * shape in bytes, not ids, so the shape is not read). */
    Py_buffer idbuf = {0};
    const uint32_t *ids32 = NULL;
    Py_ssize_t n;
    if (!PyList_Check(sequence) && !PyTuple_Check(sequence) && PyObject_CheckBuffer(sequence)) {
        if (PyObject_GetBuffer(sequence, &idbuf, PyBUF_FULL_RO) < 0) {
            PyBuffer_Release(&lengths);
            return NULL;
        }
        if (idbuf.itemsize != 4 || idbuf.len % 4 != 0 || !PyBuffer_IsContiguous(&idbuf, 'C')) {
            PyErr_SetString(PyExc_ValueError, "token ids must be a buffer of 4-byte unsigned ints");
            goto done;
        }
        ids32 = (const uint32_t *)idbuf.buf;
        n = idbuf.len / 4;
    }
    else {
        /* A list is used as it is; any other sequence of ints is listed once. */
        ids = PySequence_Tuple(sequence);
        if (ids == NULL) {
            PyBuffer_Release(&lengths);
            return NULL;
        }
        n = PyTuple_Size(ids);
    }
    if (lengths.len % 4 != 0) {
        PyErr_SetString(PyExc_ValueError, "lengths must be 4-byte integers");
        goto done;
    }
    const int32_t *table = (const int32_t *)lengths.buf;
    Py_ssize_t ntable = lengths.len / 4;
    Py_ssize_t width = wide ? 8 : 4;
    if (n > PY_SSIZE_T_MAX / width) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, n * width);
    if (result == NULL) {
        goto done;
    }
    char *out = PyBytes_AsString(result);
    const unsigned char *d = (const unsigned char *)utf8;
    int ascii = nbytes == nchars;
    Py_ssize_t ci = 0;          /* characters that start before byte ``cbyte`` */
    Py_ssize_t cbyte = 0;       /* the bytes read so far */
    long long bend = 0;         /* the UTF-8 end of the tokens so far */
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t id;
        if (ids32 != NULL) {
            uint32_t v;
            memcpy(&v, ids32 + k, 4);
            id = (Py_ssize_t)v;
        }
        else {
            id = PyLong_AsSsize_t(PyTuple_GetItem(ids, k));
            if (id == -1 && PyErr_Occurred()) {
                Py_CLEAR(result);
                goto done;
            }
        }
        if (id < 0 || id >= ntable) {
            PyErr_Format(PyExc_ValueError, "token id %zd is outside the table of %zd lengths", id, ntable);
            Py_CLEAR(result);
            goto done;
        }
        int32_t length;
        memcpy(&length, (const char *)table + id * 4, 4);
        if (length < 0) {
            PyErr_Format(PyExc_ValueError, "token %zd has a negative length", id);
            Py_CLEAR(result);
            goto done;
        }
        bend += length;
        if (ascii) {
            ci = bend < (long long)nchars ? (Py_ssize_t)bend : nchars;
        }
        else {
            /* The characters that start before ``bend``: the bytes before it that are
             * not continuation bytes. */
            Py_ssize_t stop = bend < (long long)nbytes ? (Py_ssize_t)bend : nbytes;
            for (; cbyte < stop; cbyte++) {
                ci += (d[cbyte] & 0xC0) != 0x80;
            }
        }
        long long end = (long long)ci + start;
        if (wide) {
            int64_t v = (int64_t)end;
            memcpy(out + k * 8, &v, 8);
        }
        else {
            if (end > INT32_MAX || end < INT32_MIN) {
                PyErr_SetString(PyExc_OverflowError, "a token end does not fit 4 bytes");
                Py_CLEAR(result);
                goto done;
            }
            int32_t v = (int32_t)end;
            memcpy(out + k * 4, &v, 4);
        }
    }
done:
    Py_XDECREF(ids);
    if (idbuf.obj != NULL) {
        PyBuffer_Release(&idbuf);
    }
    PyBuffer_Release(&lengths);
    return result;
}

PyDoc_STRVAR(utf8_sizes_doc,
"utf8_sizes(text, starts, ends) -> list[int]\n\n"
"The UTF-8 size of ``text[starts[k]:ends[k]]`` for each k (``starts`` and ``ends``: lists\n"
"of ints or buffers of 4- or 8-byte integers, as long as each other), the str read a\n"
"block at a time. Reference: ``len(text[s:e].encode('utf-8', 'surrogatepass'))``.");

static PyObject *
utf8_sizes(PyObject *self, PyObject *args)
{
    PyObject *text, *starts_obj, *ends_obj;
    if (!PyArg_ParseTuple(args, "UOO:utf8_sizes", &text, &starts_obj, &ends_obj)) {
        return NULL;
    }
    Ints starts, ends;
    if (ints_open(&starts, starts_obj, "starts") < 0) {
        return NULL;
    }
    if (ints_open(&ends, ends_obj, "ends") < 0) {
        ints_close(&starts);
        return NULL;
    }
    PyObject *result = NULL;
    Units u;
    if (starts.len != ends.len) {
        PyErr_SetString(PyExc_ValueError, "starts and ends differ in length");
        goto done;
    }
    if (units_open_read(&u, text, STR_KIND, BLOCK) < 0) {
        goto done;
    }
    result = PyList_New(starts.len);
    for (Py_ssize_t k = 0; result != NULL && k < starts.len; k++) {
        long long s = ints_at(&starts, k), e = ints_at(&ends, k);
        if (PyErr_Occurred()) {
            Py_CLEAR(result);
            break;
        }
        if (s < 0 || e > u.n || s > e) {
            PyErr_Format(PyExc_ValueError, "span [%lld, %lld) is outside the text", s, e);
            Py_CLEAR(result);
            break;
        }
        long long size = e - s;
        Blocks *b = &u.blocks;
        for (Py_ssize_t i = (Py_ssize_t)s; i < (Py_ssize_t)e && !b->failed;) {
            if ((size_t)(i - b->lo) >= (size_t)b->len) {
                b->from = i; /* a block from here on: the spans go forward */
                blocks_fill(b, i);
                continue;
            }
            /* the bytes past one a code point takes, over what the block holds of the span */
            const Py_UCS4 *c = b->buf + (i - b->lo);
            Py_ssize_t stop = b->lo + b->len < (Py_ssize_t)e ? b->lo + b->len : (Py_ssize_t)e;
            for (Py_ssize_t j = 0, m = stop - i; j < m; j++) {
                size += (c[j] >= 0x80) + (c[j] >= 0x800) + (c[j] >= 0x10000);
            }
            i = stop;
        }
        PyObject *n = u.blocks.failed ? NULL : PyLong_FromLongLong(size);
        if (n == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SetItem(result, k, n); /* (steals n; cannot fail here) */
    }
    units_close(&u);
done:
    ints_close(&starts);
    ints_close(&ends);
    return result;
}

#define BUILD_FIELDS 32

PyDoc_STRVAR(build_doc,
"build(cls, names, columns, n) -> list\n\n"
"``n`` instances of ``cls`` made without its __init__, each field ``names[f]`` set as\n"
"``object.__setattr__`` sets it, to item k of ``columns[f]`` (a list or tuple of ``n``).\n"
"Reference: ``_api._build`` (each field's slot setter mapped over the instances).");

static PyObject *
build(PyObject *self, PyObject *args)
{
    PyTypeObject *cls;
    PyObject *names, *columns;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!O!O!n:build", &PyType_Type, &cls, &PyTuple_Type, &names, &PyTuple_Type,
                          &columns, &n)) {
        return NULL;
    }
    Py_ssize_t fields = PyTuple_Size(names);
    if (fields != PyTuple_Size(columns) || fields > BUILD_FIELDS || n < 0) {
        PyErr_SetString(PyExc_ValueError, "a column per name (at most 32), and n >= 0");
        return NULL;
    }
    PyObject *name[BUILD_FIELDS], *column[BUILD_FIELDS]; /* (borrowed: the tuples hold them) */
    int listed[BUILD_FIELDS];
    for (Py_ssize_t f = 0; f < fields; f++) {
        name[f] = PyTuple_GetItem(names, f);
        column[f] = PyTuple_GetItem(columns, f);
        listed[f] = PyList_Check(column[f]);
        if (!PyUnicode_Check(name[f]) || !(listed[f] || PyTuple_Check(column[f])) ||
            PyObject_Length(column[f]) != n) {
            PyErr_SetString(PyExc_ValueError, "names are str, and each column a list or tuple of n items");
            return NULL;
        }
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(cls, Py_tp_alloc);
    PyObject *out = alloc == NULL ? NULL : PyList_New(n);
    if (out == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "cls has no allocator");
        }
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *obj = alloc(cls, 0);
        if (obj == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SetItem(out, k, obj); /* (steals obj; cannot fail here) */
        for (Py_ssize_t f = 0; f < fields; f++) {
            /* (a list's item is read each time: a setter could shorten it) */
            PyObject *v = listed[f] ? PyList_GetItem(column[f], k) : PyTuple_GetItem(column[f], k);
            if (v == NULL || PyObject_GenericSetAttr(obj, name[f], v) < 0) {
                Py_DECREF(out);
                return NULL;
            }
        }
    }
    return out;
}

PyDoc_STRVAR(prefix_counts_doc,
"prefix_counts(ends, edges, out) -> list[int] | None\n\n"
"How many of ``ends`` (sorted token ends) are at or before each of ``edges`` (sorted):\n"
"bisect_right for each. ``ends`` and ``edges`` are buffers of 4- or 8-byte integers or\n"
"lists of ints. Into ``out`` (a writable buffer of 8-byte integers, as long as\n"
"``edges``, and not one of them) when it is given, else as a new list.");

static PyObject *
prefix_counts(PyObject *self, PyObject *args)
{
    PyObject *ends_obj, *edges_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOO:prefix_counts", &ends_obj, &edges_obj, &out_obj)) {
        return NULL;
    }
    Ints ends, edges;
    if (ints_open(&ends, ends_obj, "ends") < 0) {
        return NULL;
    }
    if (ints_open(&edges, edges_obj, "edges") < 0) {
        ints_close(&ends);
        return NULL;
    }
    PyObject *result = NULL;
    Py_buffer out = {0};
    int has_out = out_obj != Py_None;
    if (has_out) {
        if (PyObject_GetBuffer(out_obj, &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
            goto done;
        }
        if (out.len < edges.len * 8) {
            PyErr_SetString(PyExc_ValueError, "out must hold an 8-byte integer per edge");
            PyBuffer_Release(&out);
            has_out = 0;
            goto done;
        }
    }
    else {
        result = PyList_New(edges.len);
        if (result == NULL) {
            goto done;
        }
    }
    Py_ssize_t lo = 0;
    long long previous = 0;
    for (Py_ssize_t k = 0; k < edges.len; k++) {
        long long e = ints_at(&edges, k);
        if (e == -1 && PyErr_Occurred()) {
            Py_CLEAR(result);
            goto done;
        }
        if (k > 0 && e < previous) {
            lo = 0; /* not sorted: search from the start */
        }
        previous = e;
        Py_ssize_t hi = ends.len;
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            long long v = ints_at(&ends, mid);
            if (v == -1 && PyErr_Occurred()) {
                Py_CLEAR(result);
                goto done;
            }
            if (v <= e) {
                lo = mid + 1;
            }
            else {
                hi = mid;
            }
        }
        if (has_out) {
            int64_t value = (int64_t)lo;
            memcpy((char *)out.buf + k * 8, &value, 8);
        }
        else {
            PyObject *n = PyLong_FromSsize_t(lo);
            if (n == NULL) {
                Py_CLEAR(result);
                goto done;
            }
            PyList_SetItem(result, k, n); /* (steals n; cannot fail here) */
        }
    }
    if (has_out) {
        result = Py_NewRef(Py_None);
    }
done:
    if (has_out) {
        PyBuffer_Release(&out);
    }
    ints_close(&edges);
    ints_close(&ends);
    return result;
}

PyDoc_STRVAR(first_found_doc,
"first_found(units, kind, needles) -> list[int]\n\n"
"For each of ``needles`` (a tuple of non-empty ASCII strings), the offset of its first\n"
"occurrence in a text (its ``units`` of ``kind``), or -1: what ``[text.find(n) for n in needles]`` gives, in one\n"
"pass over the text instead of one per needle.");

static PyObject *
first_found(PyObject *self, PyObject *args)
{
    PyObject *units_obj, *needles;
    int kind;
    if (!PyArg_ParseTuple(args, "OiO!:first_found", &units_obj, &kind, &PyTuple_Type, &needles))
        return NULL;
    Units text;
    if (units_open(&text, units_obj, kind) < 0)
        return NULL;
    kind = text.kind;
    Py_ssize_t n = PyTuple_Size(needles);
    Py_ssize_t size = text.n;
    const void *data = text.data;
    Py_ssize_t *found = PyMem_New(Py_ssize_t, n ? n : 1);
    Py_ssize_t *next = PyMem_New(Py_ssize_t, n ? n : 1);
    /* each needle's characters and length (its UTF-8, held by the tuple's str) */
    const char **chars_of = PyMem_New(const char *, n ? n : 1);
    Py_ssize_t *len_of = PyMem_New(Py_ssize_t, n ? n : 1);
    PyObject *out = NULL;
    Py_ssize_t head[128];
    if (found == NULL || next == NULL || chars_of == NULL || len_of == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int c = 0; c < 128; c++)
        head[c] = -1;
    /* Needles in buckets by their first character, each bucket kept in tuple order. */
    for (Py_ssize_t j = n - 1; j >= 0; j--) {
        PyObject *needle = PyTuple_GetItem(needles, j);
        const char *chars = NULL;
        Py_ssize_t len = 0;
        int ascii = needle != NULL && PyUnicode_Check(needle) && (chars = PyUnicode_AsUTF8AndSize(needle, &len)) != NULL;
        for (Py_ssize_t k = 0; ascii && k < len; k++)
            ascii = (unsigned char)chars[k] < 128;
        if (!ascii || len == 0) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "first_found: every needle must be a non-empty ASCII str");
            goto done;
        }
        chars_of[j] = chars;
        len_of[j] = len;
        unsigned char c = (unsigned char)chars[0];
        found[j] = -1;
        next[j] = head[c];
        head[c] = j;
    }
    Py_ssize_t left = n;
    for (Py_ssize_t i = 0; i < size && left > 0; i++) {
        Py_UCS4 c = unit_at(kind, data, i);
        if (c >= 128)
            continue;
        /* Unlink each needle once it is found, so a bucket holds only needles still sought. */
        Py_ssize_t *link = &head[c];
        while (*link >= 0) {
            Py_ssize_t j = *link;
            Py_ssize_t len = len_of[j];
            const char *chars = chars_of[j];
            int same = len <= size - i;
            for (Py_ssize_t k = 1; same && k < len; k++)
                same = unit_at(kind, data, i + k) == (Py_UCS4)(unsigned char)chars[k];
            if (same) {
                found[j] = i;
                left--;
                *link = next[j];
            }
            else {
                link = &next[j];
            }
        }
    }
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *v = PyLong_FromSsize_t(found[j]);
        if (v == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SetItem(out, j, v);
    }
done:
    PyMem_Free(found);
    PyMem_Free(next);
    PyMem_Free(chars_of);
    PyMem_Free(len_of);
    units_close(&text);
    return out;
}

/* ---- Validation: where the stdlib's decoder (strict strings, NaN and Infinity
 * allowed, any keys) ends a value, without building it ---- */

#define RAN_OUT (-2)
#define INVALID (-1)

static inline int
hex_digit(Py_UCS4 c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The end of the string at ``i`` (its opening quote) as json.scanstring reads it with
 * strict=True: no control character, escapes only \" \\ \/ \b \f \n \r \t and \u with
 * four hex digits (a surrogate pair is two of those). */
static Py_ssize_t
valid_string_end(int kind, const void *data, Py_ssize_t i, Py_ssize_t stop)
{
    for (i++; i < stop; i++) {
        Py_UCS4 c = unit_at(kind, data, i);
        if (c == '"') {
            return i + 1;
        }
        if (c < 0x20) {
            return INVALID;
        }
        if (c != '\\') {
            continue;
        }
        if (i + 1 >= stop) {
            return RAN_OUT;
        }
        Py_UCS4 e = unit_at(kind, data, i + 1);
        if (e == 'u') {
            for (int k = 2; k < 6; k++) {
                if (i + k >= stop) {
                    return RAN_OUT;
                }
                if (!hex_digit(unit_at(kind, data, i + k))) {
                    return INVALID;
                }
            }
            i += 5;
        }
        else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
            i += 1;
        }
        else {
            return INVALID;
        }
    }
    return RAN_OUT;
}

/* Whether ``text[i:stop]`` is a proper prefix of a scalar the number pattern or a
 * literal would read (the tokenizer waits for more rather than failing). */
static int
scalar_prefix(int kind, const void *data, Py_ssize_t i, Py_ssize_t stop)
{
    static const char *words[] = {"true", "false", "null", "NaN", "Infinity", "-Infinity"};
    for (int w = 0; w < 6; w++) {
        Py_ssize_t len = (Py_ssize_t)strlen(words[w]), k = 0;
        if (stop - i >= len) {
            continue;
        }
        while (i + k < stop && unit_at(kind, data, i + k) == (Py_UCS4)words[w][k]) {
            k++;
        }
        if (i + k == stop) {
            return 1;
        }
    }
    return 0;
}

/* Whether the number read over ``text[start:i]`` may go on with ``text[i:stop]`` (a
 * dot with no fraction yet, an exponent's mark and sign with none yet). */
static int
number_goes_on(int kind, const void *data, Py_ssize_t start, Py_ssize_t i, Py_ssize_t stop)
{
    if (i >= stop) {
        return 1;
    }
    int dot = 0, exp = 0;
    for (Py_ssize_t k = start; k < i; k++) {
        Py_UCS4 c = unit_at(kind, data, k);
        dot |= c == '.';
        exp |= c == 'e' || c == 'E';
    }
    Py_UCS4 c = unit_at(kind, data, i);
    if (c == '.') {
        return !dot && !exp && stop - i == 1;
    }
    if (c == 'e' || c == 'E') {
        if (exp || stop - i > 2) {
            return 0;
        }
        Py_UCS4 sign = stop - i == 2 ? unit_at(kind, data, i + 1) : '+';
        return sign == '+' || sign == '-';
    }
    return 0;
}

/* What json_front keeps while walking: each open container's start and the end of its
 * last complete child as the tokenizer emits it (a string, literal or closed container
 * when its last character is read; a number only once a character that cannot go on
 * with it follows), -1 for none; as many as the walk's depth. */
struct front {
    Py_ssize_t *starts, *last;
};

/* The end of the JSON value at ``pos`` in text[:stop] as json.JSONDecoder().raw_decode
 * finds it (containers iteratively: depth costs no recursion here), INVALID where it
 * fails before ``stop``, RAN_OUT where it needs more text than that (or -3 on a memory
 * error, with the exception set); ``*depth_out`` is the depth where it stopped.
 *
 * With ``f`` (json_front), the open containers are kept, and what runs into ``stop`` is
 * told apart as the tokenizer does it: a scalar or number cut short by ``stop`` runs out,
 * anything else invalid. Without, a scalar within 10 characters of ``stop`` or a
 * character within 3 after a value runs out (the caller reads a longer window). */
static Py_ssize_t
json_walk(int kind, const void *data, Py_ssize_t pos, Py_ssize_t stop, struct front *f, Py_ssize_t *depth_out)
{
    char *stack = NULL; /* 1 for an object, 0 for an array, per open container */
    Py_ssize_t depth = 0, room = 0, i = pos, result, value_start = pos;
    int is_object, number = 0;
value:
    if (i >= stop) {
        result = RAN_OUT;
        goto done;
    }
    {
        Py_UCS4 c = unit_at(kind, data, i);
        number = 0;
        value_start = i;
        if (c == '{' || c == '[') {
            Py_ssize_t j = skip_json_ws(kind, data, i + 1, stop);
            if (j < stop && unit_at(kind, data, j) == (c == '{' ? '}' : ']')) {
                i = j + 1;
                goto after;
            }
            if (depth == room) {
                room = room ? 2 * room : 64;
                char *grown = PyMem_Realloc(stack, (size_t)room);
                if (grown == NULL) {
                    goto no_memory;
                }
                stack = grown;
                if (f != NULL) {
                    Py_ssize_t *starts = PyMem_Realloc(f->starts, (size_t)room * sizeof(Py_ssize_t));
                    if (starts == NULL) {
                        goto no_memory;
                    }
                    f->starts = starts;
                    Py_ssize_t *last = PyMem_Realloc(f->last, (size_t)room * sizeof(Py_ssize_t));
                    if (last == NULL) {
                        goto no_memory;
                    }
                    f->last = last;
                }
            }
            if (f != NULL) {
                f->starts[depth] = i;
                f->last[depth] = -1;
            }
            stack[depth++] = c == '{';
            i = j;
            if (c == '{') {
                goto key;
            }
            goto value;
        }
        if (c == '"') {
            i = valid_string_end(kind, data, i, stop);
        }
        else {
            Py_ssize_t end = scalar_end(kind, data, i, stop);
            if (end < 0) {
                PyErr_Clear();
                /* A literal or number cut short by ``stop`` may go on after it. */
                int short_ = f != NULL ? scalar_prefix(kind, data, i, stop) : stop - i < 10;
                i = short_ ? RAN_OUT : INVALID;
            }
            else {
                number = (c == '-' || (c >= '0' && c <= '9')) && unit_at(kind, data, end - 1) != 'y';
                i = end;
            }
        }
        if (i < 0) {
            result = i;
            goto done;
        }
    }
after: /* a value ends at i */
    if (depth == 0) {
        result = i;
        goto done;
    }
    if (f != NULL) {
        Py_UCS4 c = i < stop ? unit_at(kind, data, i) : '0';
        if (!number || !((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) {
            f->last[depth - 1] = i;
        }
        else {
            /* the number cut short by ``stop``, or a character that cannot go on with it */
            result = number_goes_on(kind, data, value_start, i, stop) ? RAN_OUT : INVALID;
            goto done;
        }
    }
    number = 0;
    i = skip_json_ws(kind, data, i, stop);
    if (i >= stop) {
        result = RAN_OUT;
        goto done;
    }
    is_object = stack[depth - 1];
    {
        Py_UCS4 c = unit_at(kind, data, i);
        if (c == ',') {
            i = skip_json_ws(kind, data, i + 1, stop);
            if (is_object) {
                goto key;
            }
            goto value;
        }
        if (c == (is_object ? '}' : ']')) {
            depth--;
            i++;
            goto after;
        }
        /* A number just before ``stop`` may go on after it ("1." then a digit). */
        result = f == NULL && stop - i < 3 ? RAN_OUT : INVALID;
        goto done;
    }
key:
    if (i >= stop) {
        result = RAN_OUT;
        goto done;
    }
    if (unit_at(kind, data, i) != '"') {
        result = INVALID;
        goto done;
    }
    i = valid_string_end(kind, data, i, stop);
    if (i < 0) {
        result = i;
        goto done;
    }
    i = skip_json_ws(kind, data, i, stop);
    if (i >= stop) {
        result = RAN_OUT;
        goto done;
    }
    if (unit_at(kind, data, i) != ':') {
        result = INVALID;
        goto done;
    }
    i = skip_json_ws(kind, data, i + 1, stop);
    goto value;
no_memory:
    PyErr_NoMemory();
    result = -3;
done:
    PyMem_Free(stack);
    if (depth_out != NULL) {
        *depth_out = depth;
    }
    return result;
}

static Py_ssize_t
valid_value_end(int kind, const void *data, Py_ssize_t pos, Py_ssize_t stop)
{
    return json_walk(kind, data, pos, stop, NULL, NULL);
}

PyDoc_STRVAR(json_value_end_doc,
"json_value_end(units, kind, pos, stop) -> int\n\n"
"The end of the JSON value at ``pos`` in ``text[:stop]`` (the text's ``units`` of ``kind``), as the standard library's\n"
"decoder (``NaN`` and ``Infinity`` allowed, strict strings) would find it, without\n"
"building the value and at any depth; -1 where it is not valid before ``stop``, -2\n"
"where it runs into ``stop``. A decoder stops after ``0`` in ``01``: the caller checks\n"
"for a digit after the end.");

/* The arguments ``(units, kind, pos, stop)`` of json_value_end and json_front: ``stop``
 * clamped to the text, ``pos`` within ``text[:stop]``. */
static int
walk_args(PyObject *args, const char *format, Units *text, Py_ssize_t *pos, Py_ssize_t *stop)
{
    PyObject *units;
    int kind;
    if (!PyArg_ParseTuple(args, format, &units, &kind, pos, stop) || units_open(text, units, kind) < 0) {
        return -1;
    }
    if (*stop > text->n) {
        *stop = text->n;
    }
    if (*pos < 0 || *pos > *stop) {
        PyErr_SetString(PyExc_IndexError, "pos must be within text[:stop]");
        units_close(text);
        return -1;
    }
    return 0;
}

static PyObject *
json_value_end(PyObject *self, PyObject *args)
{
    Units text;
    Py_ssize_t pos, stop;
    if (walk_args(args, "Oinn:json_value_end", &text, &pos, &stop) < 0) {
        return NULL;
    }
    Py_ssize_t end = valid_value_end(text.kind, text.data, pos, stop);
    units_close(&text);
    return end == -3 ? NULL : PyLong_FromSsize_t(end);
}

PyDoc_STRVAR(json_front_doc,
"json_front(units, kind, pos, stop) -> (bytes, int) | None\n\n"
"For _json._salvage: the value at ``pos`` read up to ``stop``, where it runs into\n"
"``stop`` (a valid front cut short): the starts of its open containers, outermost\n"
"first, packed as 8-byte integers, and the end of the innermost one's last complete child as the tokenizer emits\n"
"it (-1 for none). None where the text is invalid before ``stop`` or the value ends\n"
"before it.");

static PyObject *
json_front(PyObject *self, PyObject *args)
{
    Units text;
    Py_ssize_t pos, stop;
    if (walk_args(args, "Oinn:json_front", &text, &pos, &stop) < 0) {
        return NULL;
    }
    struct front f = {NULL, NULL};
    Py_ssize_t depth;
    Py_ssize_t found = json_walk(text.kind, text.data, pos, stop, &f, &depth);
    units_close(&text);
    Py_ssize_t *starts = f.starts, *last = f.last;
    if (found == -3) {
        PyMem_Free(starts);
        PyMem_Free(last);
        return NULL;
    }
    if (found != RAN_OUT || depth == 0) { /* invalid before ``stop``, or complete */
        PyMem_Free(starts);
        PyMem_Free(last);
        Py_RETURN_NONE;
    }
    /* (packed: a list of a hundred thousand ints held 36 bytes each) */
    PyObject *opened = PyBytes_FromStringAndSize(NULL, depth * 8);
    PyObject *out = NULL;
    if (opened != NULL) {
        char *buf = PyBytes_AsString(opened);
        for (Py_ssize_t k = 0; k < depth; k++) {
            int64_t v = (int64_t)starts[k];
            memcpy(buf + 8 * k, &v, 8);
        }
        out = Py_BuildValue("(Nn)", opened, last[depth - 1]);
    }
    PyMem_Free(starts);
    PyMem_Free(last);
    return out;
}

PyDoc_STRVAR(json_values_doc,
"json_values(units, kind, pos, lines, width, limit) -> (bytes, int)\n\n"
"_json._lenient_items's loop while every value is valid: from ``pos``, the start and\n"
"end of each value after white space (at most ``limit`` values), packed as machine\n"
"integers of ``width`` bytes (4 or 8, an array's itemsize), and the offset where it\n"
"stopped: the end of the text, after the ``limit``-th value, or the start of a value it\n"
"leaves to the decoder (one that fails, has a digit after it, or is followed by a\n"
"character at or above U+0300, which may join its last one). With ``lines``, a value\n"
"is read within its own line first, then within windows twice as long, as\n"
"_decode_in_line reads it.");

static PyObject *
json_values_in(const Units *text, Py_ssize_t pos, int lines, Py_ssize_t width, Py_ssize_t limit)
{
    Py_ssize_t n = text->n;
    int kind = text->kind;
    const void *data = text->data;
    if (pos < 0 || pos > n) {
        PyErr_SetString(PyExc_IndexError, "pos outside the text");
        return NULL;
    }
    if ((width != 4 && width != 8) || (width == 4 && n > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "width must be 8, or 4 for a text of fewer than 2**31 characters");
        return NULL;
    }
    if (limit < 1 || limit > (PY_SSIZE_T_MAX / 16)) {
        PyErr_SetString(PyExc_ValueError, "limit must be between 1 and PY_SSIZE_T_MAX / 16");
        return NULL;
    }
    Py_ssize_t cap = limit < 1024 ? limit : 1024, count = 0;
    char *packed = PyMem_Malloc(2 * width * cap);
    if (packed == NULL) {
        return PyErr_NoMemory();
    }
    /* The first line break at or after ``searched`` (-1: none): many values on one line
     * ask for the same one, which is searched for once. */
    Py_ssize_t searched = -1, eol = -1;
    while (count < limit) {
        pos = skip_json_ws(kind, data, pos, n);
        if (pos >= n) {
            break;
        }
        Py_ssize_t size = 0, end;
        for (;;) {
            Py_ssize_t hi = n;
            if (lines) {
                Py_ssize_t from = pos + size < n ? pos + size : n;
                if (searched < 0 || from < searched || (eol >= 0 && from > eol)) {
                    eol = -1;
                    for (Py_ssize_t q = from; q < n; q++) {
                        if (unit_at(kind, data, q) == '\n') {
                            eol = q;
                            break;
                        }
                    }
                    searched = from;
                }
                hi = eol < 0 ? n : eol + 1;
            }
            end = valid_value_end(kind, data, pos, hi);
            if (end >= 0 || end == -3 || end == INVALID || hi >= n) {
                break;
            }
            size = 2 * (hi - pos) > 64 ? 2 * (hi - pos) : 64;
        }
        if (end == -3) {
            PyMem_Free(packed);
            return NULL;
        }
        if (end < 0) {
            break;
        }
        if (end < n) {
            Py_UCS4 after = unit_at(kind, data, end), first = unit_at(kind, data, pos);
            if ((after >= '0' && after <= '9' && (first == '-' || (first >= '0' && first <= '9'))) || after >= 0x300) {
                break;
            }
        }
        if (count == cap) {
            Py_ssize_t more = cap * 2 < limit ? cap * 2 : limit;
            char *grown = PyMem_Realloc(packed, 2 * width * more);
            if (grown == NULL) {
                PyMem_Free(packed);
                return PyErr_NoMemory();
            }
            packed = grown;
            cap = more;
        }
        if (width == 4) {
            int32_t pair[2] = {(int32_t)pos, (int32_t)end};
            memcpy(packed + 8 * count, pair, 8);
        }
        else {
            int64_t pair[2] = {(int64_t)pos, (int64_t)end};
            memcpy(packed + 16 * count, pair, 16);
        }
        count++;
        pos = end;
    }
    PyObject *out = PyBytes_FromStringAndSize(packed, 2 * width * count);
    PyMem_Free(packed);
    return out == NULL ? NULL : Py_BuildValue("(Nn)", out, pos);
}

static PyObject *
json_values(PyObject *self, PyObject *args)
{
    PyObject *units;
    Py_ssize_t pos, width, limit;
    int kind, lines;
    if (!PyArg_ParseTuple(args, "Oinpnn:json_values", &units, &kind, &pos, &lines, &width, &limit)) {
        return NULL;
    }
    Units text;
    if (units_open(&text, units, kind) < 0) {
        return NULL;
    }
    PyObject *result = json_values_in(&text, pos, lines, width, limit);
    units_close(&text);
    return result;
}

/* Markdown's line classes (_markdown._F_*), as md_lines gives them. */
enum {
    MD_BLANK = 1 << 0,
    MD_ATX = 1 << 1,
    MD_FENCE = 1 << 2,
    MD_QUOTE = 1 << 3,
    MD_HR = 1 << 4,
    MD_LIST = 1 << 5,
    MD_LIST0 = 1 << 6,
    MD_HTML = 1 << 7,
    MD_INDENTED = 1 << 8,
    MD_DELIM = 1 << 9,
    MD_PIPE = 1 << 10,
    MD_SETEXT = 1 << 11,
    MD_HEADING = 1 << 12,
    MD_LEAD = 1 << 13,
    MD_INTERRUPT = 1 << 14,
    MD_CHECK = 1 << 15, /* perhaps a list item of non-ASCII digits: for Python to decide */
};


/* ---- Markdown's line classes (_markdown._line_flags_python is the reference) ---- */


#define MD_AT(p) ((p) < b ? unit_at(kind, data, (p)) : (Py_UCS4)0)

/* Whether [p, b) is nothing but a line break ("", "\n", "\r", "\r\n"). */
static int
md_eol_rest(int kind, const void *data, Py_ssize_t p, Py_ssize_t b)
{
    if (p == b) {
        return 1;
    }
    Py_UCS4 c = unit_at(kind, data, p);
    if (c == '\n') {
        return p + 1 == b;
    }
    if (c == '\r') {
        return p + 1 == b || (p + 2 == b && unit_at(kind, data, p + 1) == '\n');
    }
    return 0;
}

static Py_ssize_t
md_skip_blank(int kind, const void *data, Py_ssize_t p, Py_ssize_t b)
{
    while (p < b) {
        Py_UCS4 c = unit_at(kind, data, p);
        if (c != ' ' && c != '\t') {
            break;
        }
        p++;
    }
    return p;
}

/* ``:?-+:?`` at p: its end, or -1. */
static Py_ssize_t
md_cell(int kind, const void *data, Py_ssize_t p, Py_ssize_t b)
{
    if (MD_AT(p) == ':') {
        p++;
    }
    Py_ssize_t dashes = p;
    while (MD_AT(p) == '-') {
        p++;
    }
    if (p == dashes) {
        return -1;
    }
    if (MD_AT(p) == ':') {
        p++;
    }
    return p;
}

/* _TABLE_DELIM.match on the line [a, b). */
static int
md_delim(int kind, const void *data, Py_ssize_t a, Py_ssize_t b)
{
    Py_ssize_t p = md_skip_blank(kind, data, a, b);
    if (MD_AT(p) == '|') {
        /* (a leading pipe after at most three spaces, nothing else) */
        for (Py_ssize_t q = a; q < p; q++) {
            if (unit_at(kind, data, q) != ' ') {
                return 0;
            }
        }
        if (p - a > 3) {
            return 0;
        }
        p = md_skip_blank(kind, data, p + 1, b);
    }
    if ((p = md_cell(kind, data, p, b)) < 0) {
        return 0;
    }
    p = md_skip_blank(kind, data, p, b);
    while (MD_AT(p) == '|') {
        Py_ssize_t q = md_skip_blank(kind, data, p + 1, b), r = md_cell(kind, data, q, b);
        if (r < 0) { /* a closing pipe */
            p = md_skip_blank(kind, data, p + 1, b);
            break;
        }
        p = md_skip_blank(kind, data, r, b);
    }
    return md_eol_rest(kind, data, p, b);
}

/* The classes of the line [a, b) (all but MD_HEADING and MD_INTERRUPT). */
static int
md_line(int kind, const void *data, Py_ssize_t a, Py_ssize_t b)
{
    int f = 0;
    Py_ssize_t p = md_skip_blank(kind, data, a, b);
    if (md_eol_rest(kind, data, p, b)) {
        f |= MD_BLANK;
    }
    Py_UCS4 first = MD_AT(a);
    if (first == ' ' || first == '\t') {
        f |= MD_LEAD;
    }
    if (first == '\t' || (b - a >= 4 && unit_at(kind, data, a) == ' ' && unit_at(kind, data, a + 1) == ' ' &&
                          unit_at(kind, data, a + 2) == ' ' && unit_at(kind, data, a + 3) == ' ')) {
        f |= MD_INDENTED;
    }
    if (find_char(kind, data, b, '|', a, b) >= 0) {
        f |= MD_PIPE;
    }
    if (md_delim(kind, data, a, b)) {
        f |= MD_DELIM;
    }
    Py_ssize_t s = a;
    while (s < b && s - a < 4 && unit_at(kind, data, s) == ' ') {
        s++;
    }
    if (s - a > 3) {
        return f; /* the rest take at most three spaces before them */
    }
    Py_UCS4 c = MD_AT(s);
    Py_ssize_t q = s;
    if (c == '#') {
        while (MD_AT(q) == '#') {
            q++;
        }
        Py_UCS4 after = MD_AT(q);
        if (q - s <= 6 && (q == b || after == ' ' || after == '\t' || after == '\r' || after == '\n')) {
            f |= MD_ATX;
        }
    }
    else if (c == '`' || c == '~') {
        while (MD_AT(q) == c) {
            q++;
        }
        if (q - s >= 3) {
            f |= MD_FENCE;
        }
    }
    else if (c == '>') {
        f |= MD_QUOTE;
    }
    else if (c == '<') {
        Py_UCS4 d = MD_AT(s + 1), e = MD_AT(s + 2);
#define MD_ALPHA(x) (((x) >= 'a' && (x) <= 'z') || ((x) >= 'A' && (x) <= 'Z'))
        if (MD_ALPHA(d) || (d == '/' && MD_ALPHA(e)) || (d == '!' && e == '-' && MD_AT(s + 3) == '-') || d == '?' ||
            (d == '!' && e >= 'A' && e <= 'Z')) {
            f |= MD_HTML;
        }
#undef MD_ALPHA
    }
    if (c == '-' || c == '*' || c == '_') { /* a thematic break: c three times or more, blanks between */
        Py_ssize_t count = 0, r = s;
        while (r < b) {
            Py_UCS4 x = unit_at(kind, data, r);
            if (x == c) {
                count++;
            }
            else if (x != ' ' && x != '\t') {
                break;
            }
            r++;
        }
        if (count >= 3 && md_eol_rest(kind, data, r, b)) {
            f |= MD_HR;
        }
    }
    if (c == '=' || c == '-') { /* a setext underline */
        Py_ssize_t r = s;
        while (MD_AT(r) == c) {
            r++;
        }
        r = md_skip_blank(kind, data, r, b);
        Py_UCS4 x = MD_AT(r);
        if (r == b || x == '\r' || x == '\n') {
            f |= MD_SETEXT;
        }
    }
    /* A list item: -, * or + , or 1 to 9 digits then . or ), then blanks or the end. */
    Py_ssize_t m = -1;
    if (c == '-' || c == '*' || c == '+') {
        m = s + 1;
    }
    else if (s < b && (c >= 0x80 || (c >= '0' && c <= '9'))) {
        /* Digits are Unicode's decimal digits (a regex's \d), which the limited API
         * cannot tell: a run with a character past ASCII is left to Python (MD_CHECK). */
        Py_ssize_t r = s;
        int unsure = 0;
        while (r < b && r - s <= 9) {
            Py_UCS4 d = unit_at(kind, data, r);
            if (d >= 0x80) {
                unsure = 1;
            }
            else if (d < '0' || d > '9') {
                break;
            }
            r++;
        }
        Py_UCS4 x = MD_AT(r);
        if (r - s <= 9 && (x == '.' || x == ')')) {
            if (!unsure) {
                m = r + 1;
            }
            else {
                Py_UCS4 y = MD_AT(r + 1);
                if (y == ' ' || y == '\t' || md_eol_rest(kind, data, r + 1, b)) {
                    f |= MD_CHECK;
                }
            }
        }
    }
    if (m >= 0) {
        Py_UCS4 x = MD_AT(m);
        if (x == ' ' || x == '\t' || md_eol_rest(kind, data, m, b)) {
            f |= MD_LIST | (s == a ? MD_LIST0 : 0);
        }
    }
    return f;
}

/* The end of the line that starts at p (its line break included; text of n). */
static Py_ssize_t
md_line_end(int kind, const void *data, Py_ssize_t p, Py_ssize_t n)
{
    while (p < n) {
        Py_UCS4 c = unit_at(kind, data, p);
        if (c == '\n') {
            return p + 1;
        }
        if (c == '\r') {
            return p + 1 < n && unit_at(kind, data, p + 1) == '\n' ? p + 2 : p + 1;
        }
        p++;
    }
    return n;
}

/* The offset of the bracket that closes the container opening at ``pos`` (strings
 * skipped; the text was validated, so brackets are not matched by type), or -1 with a
 * ValueError where none does. */
static Py_ssize_t
container_close(int kind, const void *data, Py_ssize_t pos, Py_ssize_t n)
{
    Py_ssize_t depth = 0;
    for (Py_ssize_t i = pos; i < n; i++) {
        Py_UCS4 c = SCAN_READ(kind, data, i);
        if (c == '"') {
            Py_ssize_t e = string_end(kind, data, i, n);
            if (e < 0) {
                break;
            }
            i = e - 1;
        }
        else if (c == '[' || c == '{') {
            depth++;
        }
        else if ((c == ']' || c == '}') && --depth == 0) {
            return i;
        }
    }
    PyErr_Format(PyExc_ValueError, "unbalanced JSON container at offset %zd", pos);
    return -1;
}

/* The end of the value at ``pos`` of a validated text (-1 with a ValueError). */
static Py_ssize_t
child_value_end(int kind, const void *data, Py_ssize_t pos, Py_ssize_t n)
{
    Py_UCS4 c = pos < n ? SCAN_READ(kind, data, pos) : 0;
    if (c == '[' || c == '{') {
        Py_ssize_t close = container_close(kind, data, pos, n);
        return close < 0 ? -1 : close + 1;
    }
    return c == '"' ? string_end(kind, data, pos, n) : scalar_end(kind, data, pos, n);
}

PyDoc_STRVAR(json_close_doc,
"json_close(units, kind, pos) -> int\n\n"
"The offset of the bracket that closes the container opening at ``pos`` of a validated\n"
"JSON text (its ``units`` of ``kind``, 8 for a str); a ValueError where none does.");

static PyObject *
json_close(PyObject *self, PyObject *args)
{
    PyObject *units;
    Py_ssize_t pos;
    int kind;
    if (!PyArg_ParseTuple(args, "Oin:json_close", &units, &kind, &pos)) {
        return NULL;
    }
    Units text;
    if (units_open_read(&text, units, kind, BLOCK) < 0) {
        return NULL;
    }
    Py_UCS4 c = pos >= 0 && pos < text.n ? SCAN_READ(text.kind, text.data, pos) : 0;
    Py_ssize_t found = c == '[' || c == '{' ? container_close(text.kind, text.data, pos, text.n)
                                            : json_invalid(pos, "container");
    units_close(&text);
    return found < 0 ? NULL : PyLong_FromSsize_t(found);
}

PyDoc_STRVAR(json_children_doc,
"json_children(units, kind, pos, close, is_object, limit) -> bytes\n\n"
"Up to ``limit`` children of a container of a validated JSON text (its ``units`` of\n"
"``kind``, 8 for a str), the first beginning at ``pos``, none at or after ``close``. Each\n"
"child as six 8-byte integers: where it begins, its key's span (empty for an element),\n"
"its value's span, and where the next begins (after the comma and whitespace).");

static PyObject *
json_children(PyObject *self, PyObject *args)
{
    PyObject *units;
    Py_ssize_t pos, close, limit;
    int kind, is_object;
    if (!PyArg_ParseTuple(args, "Oinnpn:json_children", &units, &kind, &pos, &close, &is_object, &limit)) {
        return NULL;
    }
    Units text;
    if (units_open_read(&text, units, kind, BLOCK) < 0) {
        return NULL;
    }
    int k = text.kind;
    const void *data = text.data;
    Py_ssize_t n = text.n;
    PyObject *result = NULL;
    int64_t *out = NULL;
    if (pos < 0 || close > n || limit < 0 || limit > PY_SSIZE_T_MAX / 48) {
        PyErr_SetString(PyExc_ValueError, "a child or close outside the text");
        goto done;
    }
    /* Grown as children are found: ``limit`` may stand for "all of them". */
    Py_ssize_t cap = 0, got = 0;
    while (pos < close && got < limit) {
        if (got == cap) {
            cap = cap == 0 ? 64 : 2 * cap;
            int64_t *grown = PyMem_Realloc(out, (size_t)cap * 48);
            if (grown == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            out = grown;
        }
        int64_t *c = out + 6 * got;
        Py_ssize_t at = pos, key_end = pos;
        if (is_object) {
            if ((key_end = string_end(k, data, pos, n)) < 0) {
                goto done;
            }
            at = skip_json_ws(k, data, key_end, n);
            if (at >= n || SCAN_READ(k, data, at) != ':') {
                json_invalid(at, "colon");
                goto done;
            }
            at = skip_json_ws(k, data, at + 1, n);
        }
        Py_ssize_t end = child_value_end(k, data, at, n);
        if (end < 0) {
            goto done;
        }
        Py_ssize_t next = skip_json_ws(k, data, end, n);
        if (next < n && SCAN_READ(k, data, next) == ',') {
            next = skip_json_ws(k, data, next + 1, n);
        }
        if (text.kind == STR_KIND && text.blocks.failed) {
            goto done;
        }
        int64_t child[6] = {pos, pos, key_end, at, end, next};
        memcpy(c, child, sizeof(child));
        got++;
        pos = next;
    }
    if (!(text.kind == STR_KIND && text.blocks.failed)) {
        result = PyBytes_FromStringAndSize(got ? (const char *)out : "", got * 48);
    }
done:
    PyMem_Free(out);
    units_close(&text);
    return result;
}

PyDoc_STRVAR(md_lines_doc,
"md_lines(units, kind, start, end, heading_starts, width=8) -> (bytes, bytes, bytes)\n\n"
"The lines of text[start:end] (the text's ``units`` of ``kind``) (as _markdown._LINE finds them) and their classes, as\n"
"_markdown._line_flags_python gives them: the start of each line and ``end`` after the\n"
"last (8-byte integers), a 2-byte set of _F_ flags per line (``heading_starts``, the\n"
"sorted starts of the document's headings, marks _F_HEADING), and the indices of the\n"
"lines with _F_ATX, _F_FENCE or _F_SETEXT (8-byte integers).");

static PyObject *
md_lines_in(const Units *text, Py_ssize_t start, Py_ssize_t end, PyObject *headings, int width)
{
    Py_ssize_t n = text->n;
    if (start < 0 || end > n || start > end) {
        PyErr_SetString(PyExc_IndexError, "md_lines: a range outside the text");
        return NULL;
    }
    if (width != 8 && (width != 4 || end > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "md_lines: width is 8, or 4 for offsets that fit");
        return NULL;
    }
    Ints heads;
    if (ints_open(&heads, headings, "heading_starts") < 0) {
        return NULL;
    }
    int kind = text->kind;
    const void *data = text->data;
    Py_ssize_t cap = 64, count = 0;
    int64_t *at = PyMem_New(int64_t, cap + 1);
    uint16_t *flags = PyMem_New(uint16_t, cap);
    PyObject *result = NULL;
    if (at == NULL || flags == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t h = 0, hi = heads.len, p = start;
    while (h < hi) { /* the first heading at or after ``start`` */
        Py_ssize_t mid = h + (hi - h) / 2;
        long long v = ints_at(&heads, mid);
        if (v == -1 && PyErr_Occurred()) {
            goto done;
        }
        if (v < start) {
            h = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    while (p < end) {
        Py_ssize_t b = md_line_end(kind, data, p, end);
        if (count == cap) {
            cap *= 2;
            /* (PyMem_Realloc into a temporary: PyMem_Resize sets its pointer to NULL on a
             * failure, and the block it had would be lost) */
            int64_t *a2 = (size_t)(cap + 1) > PY_SSIZE_T_MAX / sizeof(int64_t)
                              ? NULL
                              : PyMem_Realloc(at, (size_t)(cap + 1) * sizeof(int64_t));
            if (a2 == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            at = a2;
            uint16_t *f2 = (size_t)cap > PY_SSIZE_T_MAX / sizeof(uint16_t)
                               ? NULL
                               : PyMem_Realloc(flags, (size_t)cap * sizeof(uint16_t));
            if (f2 == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            flags = f2;
        }
        int f = md_line(kind, data, p, b);
        for (; h < heads.len; h++) {
            long long at_h = ints_at(&heads, h);
            if (at_h == -1 && PyErr_Occurred()) {
                goto done;
            }
            if (at_h >= p) {
                if (at_h == p) {
                    f |= MD_HEADING;
                }
                break;
            }
        }
        at[count] = p;
        flags[count] = (uint16_t)f;
        count++;
        p = b;
    }
    at[count] = end;
    /* What ends a paragraph at a line: its own classes, or a table's delimiter row after
     * it (read in the whole text, past ``end`` too). */
    for (Py_ssize_t i = 0; i < count; i++) {
        int f = flags[i];
        int next = 0;
        if (f & MD_PIPE) {
            Py_ssize_t a = (Py_ssize_t)at[i + 1];
            next = i + 1 < count ? flags[i + 1] : (a < n ? md_line(kind, data, a, md_line_end(kind, data, a, n)) : 0);
        }
        if ((f & (MD_BLANK | MD_ATX | MD_FENCE | MD_QUOTE | MD_HR | MD_HEADING | MD_LIST0)) ||
            ((f & MD_PIPE) && (next & MD_DELIM) && (next & MD_PIPE))) {
            flags[i] = (uint16_t)(f | MD_INTERRUPT);
        }
    }
    /* The lines that may open a fence or be (or underline) a heading, for the
     * document's scan (a regex over every position was most of it). */
    Py_ssize_t marked = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        marked += (flags[i] & (MD_ATX | MD_FENCE | MD_SETEXT)) != 0;
    }
    int64_t *marks = PyMem_New(int64_t, marked > 0 ? marked : 1);
    if (marks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    marked = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (flags[i] & (MD_ATX | MD_FENCE | MD_SETEXT)) {
            marks[marked++] = i;
        }
    }
    if (width == 4) { /* narrowed in place: entry i moves from byte 8i to 4i, read before written */
        int32_t *narrow = (int32_t *)at;
        for (Py_ssize_t i = 0; i <= count; i++) {
            narrow[i] = (int32_t)at[i];
        }
    }
    PyObject *spans = PyBytes_FromStringAndSize((const char *)at, (Py_ssize_t)width * (count + 1));
    PyObject *classes = spans == NULL ? NULL : PyBytes_FromStringAndSize((const char *)flags, (Py_ssize_t)sizeof(uint16_t) * count);
    PyObject *found = classes == NULL ? NULL : PyBytes_FromStringAndSize((const char *)marks, (Py_ssize_t)sizeof(int64_t) * marked);
    PyMem_Free(marks);
    if (found != NULL) {
        result = Py_BuildValue("(NNN)", spans, classes, found);
    }
    else {
        Py_XDECREF(spans);
        Py_XDECREF(classes);
    }
done:
    PyMem_Free(at);
    PyMem_Free(flags);
    ints_close(&heads);
    return result;
}

static PyObject *
md_lines(PyObject *self, PyObject *args)
{
    PyObject *units, *headings;
    Py_ssize_t start, end;
    int kind, width = 8;
    if (!PyArg_ParseTuple(args, "OinnO|i:md_lines", &units, &kind, &start, &end, &headings, &width)) {
        return NULL;
    }
    Units text;
    if (units_open(&text, units, kind) < 0) {
        return NULL;
    }
    PyObject *result = md_lines_in(&text, start, end, headings, width);
    units_close(&text);
    return result;
}

/* ---- Additive positions and prose's level scans, over tables the caller filled ---- */

/* A table of 0x110000 entries of ``entry`` bytes (read-only; aligned to its entries). */
static int
table_open(Py_buffer *view, PyObject *obj, Py_ssize_t entry)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (view->len < CODE_POINTS * entry || (uintptr_t)view->buf % (uintptr_t)entry != 0) {
        PyErr_Format(PyExc_ValueError, "a table of %zd-byte entries by code point is expected", entry);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(additive_doc,
"additive(units, kind, p, rule, step, table) -> int\n\n"
"``p`` if it is additive under ``rule`` (1: o200k_base, 2: cl100k_base), else the first\n"
"additive position from it in the direction of ``step`` (1 or -1) within 64 positions\n"
"and inside the text, else -1 (_engine.Engine._forward and _backward are the\n"
"reference). ``table``: the junction class + 1 of each code point (0x110000 bytes,\n"
"filled for the text's characters by _prose.tables; ValueError for one that is not).");

static PyObject *
additive(PyObject *self, PyObject *args)
{
    PyObject *units, *table;
    Py_ssize_t p;
    int kind, rule, step;
    if (!PyArg_ParseTuple(args, "OiniiO:additive", &units, &kind, &p, &rule, &step, &table)) {
        return NULL;
    }
    if (rule != RULE_O200K && rule != RULE_CL100K) {
        return PyErr_Format(PyExc_ValueError, "no junction rule %d", rule);
    }
    if (step != 1 && step != -1) {
        return PyErr_Format(PyExc_ValueError, "step %d is not 1 or -1", step);
    }
    Units text;
    if (units_open_read(&text, units, kind, SMALL_BLOCK) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    Py_buffer classes;
    if (p < 0 || p >= text.n) {
        PyErr_SetString(PyExc_IndexError, "position outside the text");
    }
    else if (table_open(&classes, table, 1) == 0) {
        Junction j = {text.kind, text.data, text.n, (const unsigned char *)classes.buf, 0};
        Py_ssize_t found = scan_additive(&j, p, rule, step);
        if (found != -2 && !text.blocks.failed) {
            result = PyLong_FromSsize_t(found);
        }
        PyBuffer_Release(&classes);
    }
    units_close(&text);
    return result;
}

/* The cuts as bytes of 8-byte integers (``wide``) or 4-byte ones. */
static PyObject *
cuts_bytes(const Cuts *cuts, int wide)
{
    Py_ssize_t width = wide ? 8 : 4;
    PyObject *out = PyBytes_FromStringAndSize(NULL, cuts->len * width);
    if (out != NULL) {
        char *to = PyBytes_AsString(out);
        for (Py_ssize_t i = 0; i < cuts->len; i++) {
            int64_t v = cuts->items[i];
            int32_t narrow = (int32_t)v;
            memcpy(to + width * i, wide ? (const void *)&v : (const void *)&narrow, (size_t)width);
        }
    }
    return out;
}

/* Opens a level scan's text and flag table for [start, end); the caller closes both. */
static int
scan_open(Scan *s, Units *text, Py_buffer *flags, PyObject *units, int kind, PyObject *table, Py_ssize_t start,
          Py_ssize_t end)
{
    if (units_open_read(text, units, kind, BLOCK) < 0) {
        return -1;
    }
    if (start < 0 || end > text->n || start > end) {
        PyErr_SetString(PyExc_IndexError, "range outside the text");
        units_close(text);
        return -1;
    }
    /* (the scans read from the character before the range to the one after it) */
    text->blocks.from = start > 0 ? start - 1 : 0;
    text->blocks.to = end < text->n ? end + 1 : text->n;
    if (table_open(flags, table, 2) < 0) {
        units_close(text);
        return -1;
    }
    *s = (Scan){text->kind, text->data, text->n, (const uint16_t *)flags->buf, 0};
    return 0;
}

PyDoc_STRVAR(level_cuts_doc,
"level_cuts(units, kind, start, end, level, table, wide, limit, pos) -> (bytes, int)\n\n"
"The allowed cuts of prose ``level`` (0 paragraph, 1 line, 2 sentence, 3 clause, 4 word)\n"
"strictly inside (start, end), found from ``pos`` (``start`` at first): the cuts of the\n"
"level's pattern, less those kinsoku or a grapheme cluster refuses (_prose.boundaries's\n"
"patterns are the reference). As bytes of 8-byte integers (``wide``) or 4-byte ones,\n"
"at most about ``limit`` of them (0: all), and where to go on from (``end`` when done).\n"
"``table``: the prose flags | 0x8000 of each code point (0x110000 two-byte entries,\n"
"filled for the text's characters by _prose.tables; ValueError for one that is not).\n"
"``kind`` 8 reads a str as it is, a block at a time (no copy of the whole text).");

static PyObject *
level_cuts(PyObject *self, PyObject *args)
{
    PyObject *units, *table;
    Py_ssize_t start, end, limit, pos;
    int kind, level, wide;
    if (!PyArg_ParseTuple(args, "OinniOpnn:level_cuts", &units, &kind, &start, &end, &level, &table, &wide, &limit,
                          &pos)) {
        return NULL;
    }
    if (level < 0 || level > 4) {
        return PyErr_Format(PyExc_ValueError, "no level scan for level %d", level);
    }
    Scan s;
    Units text;
    Py_buffer flags;
    if (scan_open(&s, &text, &flags, units, kind, table, start, end) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    Cuts found = {NULL, 0, 0, limit < 0 ? 0 : limit};
    if (pos < start || pos > end) {
        PyErr_SetString(PyExc_IndexError, "position outside the range");
    }
    else if (level_candidates(&s, start, end, level, &found, &pos) == 0 && !text.blocks.failed) {
        PyObject *batch = cuts_bytes(&found, wide);
        result = batch == NULL ? NULL : Py_BuildValue("(Nn)", batch, pos);
    }
    PyMem_Free(found.items);
    PyBuffer_Release(&flags);
    units_close(&text);
    return result;
}

PyDoc_STRVAR(fine_cuts_doc,
"fine_cuts(units, kind, start, end, table, wide, limit, level, pos, aux, found)\n"
"    -> (bytes, level, pos, aux, found) | None\n\n"
"The first level from ``level`` (5 identifier, 6 script, 7 weak script, 8 grapheme)\n"
"with allowed cuts strictly inside (start, end) (9 when none has any), where no\n"
"character of the range joins a neighbour in a grapheme cluster, so that each is a\n"
"cluster of its own; None when one does (the caller then steps by grapheme clusters;\n"
"_prose.boundaries is the reference). The cuts come as in ``level_cuts``, at most about\n"
"``limit`` at a time: ``pos`` -1 starts, and the level, ``pos``, ``aux`` and ``found``\n"
"returned go on (``pos`` is ``end`` when done, at the level returned).");

static PyObject *
fine_cuts(PyObject *self, PyObject *args)
{
    PyObject *units, *table;
    Py_ssize_t start, end, limit;
    int kind, wide;
    Fine f;
    if (!PyArg_ParseTuple(args, "OinnOpninlp:fine_cuts", &units, &kind, &start, &end, &table, &wide, &limit, &f.level,
                          &f.pos, &f.aux, &f.found)) {
        return NULL;
    }
    if (f.level < 5 || f.level > 8) {
        return PyErr_Format(PyExc_ValueError, "no fine scan for level %d", f.level);
    }
    Scan s;
    Units text;
    Py_buffer flags;
    if (scan_open(&s, &text, &flags, units, kind, table, start, end) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    Cuts found = {NULL, 0, 0, limit < 0 ? 0 : limit};
    int joins = 0;
    if (f.pos < 0) {
        joins = any_joins(&s, start, end);
        f.pos = start;
        f.aux = 0;
        f.found = 0;
    }
    else if (f.pos < start || f.pos > end) {
        PyErr_SetString(PyExc_IndexError, "position outside the range");
        joins = -1;
    }
    else if (f.level == 5 ? f.aux != 0
             : f.level <= 7 ? f.aux < 0 || f.aux > 7 || (f.aux != 0 && f.pos <= start)
                            : f.aux < 0 || f.aux > (1L << 30)) {
        /* (what a call hands back: a script class after a position inside, or the
         * graphemes glued since the last cut) */
        PyErr_SetString(PyExc_ValueError, "aux is not what fine_cuts hands back");
        joins = -1;
    }
    if (joins > 0) {
        result = Py_NewRef(Py_None);
    }
    else if (joins == 0 && fine_levels(&s, start, end, &f, &found) == 0 && !text.blocks.failed) {
        PyObject *batch = cuts_bytes(&found, wide);
        result = batch == NULL ? NULL
                               : Py_BuildValue("(NinlN)", batch, f.level, f.pos, f.aux, PyBool_FromLong(f.found));
    }
    PyMem_Free(found.items);
    PyBuffer_Release(&flags);
    units_close(&text);
    return result;
}

PyDoc_STRVAR(unfilled_doc,
"unfilled(units, kind, table) -> list[int]\n\n"
"The code points of a text (its ``units`` of ``kind``) whose entry in ``table`` (the\n"
"junction classes, 0x110000 bytes, writable) is 0, each once: marked 255 on the way, for\n"
"the caller to fill, and to set back to 0 wherever this call or the filling fails\n"
"(_prose.tables sets back every 255).");

static PyObject *
unfilled(PyObject *self, PyObject *args)
{
    PyObject *units, *table;
    int kind;
    if (!PyArg_ParseTuple(args, "OiO:unfilled", &units, &kind, &table)) {
        return NULL;
    }
    Units text;
    if (units_open_read(&text, units, kind, BLOCK) < 0) {
        return NULL;
    }
    Py_buffer classes;
    if (PyObject_GetBuffer(table, &classes, PyBUF_WRITABLE) < 0) {
        units_close(&text);
        return NULL;
    }
    PyObject *out = NULL;
    if (classes.len < CODE_POINTS) {
        PyErr_SetString(PyExc_ValueError, "a table of a byte by code point is expected");
        goto done;
    }
    if ((out = PyList_New(0)) == NULL) {
        goto done;
    }
    unsigned char *t = (unsigned char *)classes.buf;
    Blocks *b = &text.blocks;
    for (Py_ssize_t i = 0; i < text.n; i++) {
        Py_UCS4 c;
        if (text.kind != STR_KIND) {
            c = unit_at(text.kind, text.data, i);
        }
        else {
            /* a block at a time: the characters held are stepped over in one loop */
            c = unit_at(STR_KIND, b, i);
            if (!b->failed) {
                const Py_UCS4 *held = b->buf;
                Py_ssize_t k = i - b->lo, last = b->len - 1;
                while (k < last && (c >= CODE_POINTS || t[c] != 0)) {
                    c = held[++k];
                }
                i = b->lo + k;
            }
        }
        if (b->failed) {
            Py_CLEAR(out);
            break;
        }
        if (c >= CODE_POINTS || t[c] != 0) {
            continue;
        }
        PyObject *point = PyLong_FromLong((long)c);
        if (point == NULL || PyList_Append(out, point) < 0) {
            Py_XDECREF(point);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(point);
        t[c] = 255;
    }
done:
    PyBuffer_Release(&classes);
    units_close(&text);
    return out;
}

static PyMethodDef kernels_methods[] = {
    {"additive", additive, METH_VARARGS, additive_doc},
    {"level_cuts", level_cuts, METH_VARARGS, level_cuts_doc},
    {"fine_cuts", fine_cuts, METH_VARARGS, fine_cuts_doc},
    {"unfilled", unfilled, METH_VARARGS, unfilled_doc},
    {"char_ends", char_ends, METH_VARARGS, char_ends_doc},
    {"prefix_counts", prefix_counts, METH_VARARGS, prefix_counts_doc},
    {"utf8_sizes", utf8_sizes, METH_VARARGS, utf8_sizes_doc},
    {"build", build, METH_VARARGS, build_doc},
    {"first_found", first_found, METH_VARARGS, first_found_doc},
    {"json_value_end", json_value_end, METH_VARARGS, json_value_end_doc},
    {"json_front", json_front, METH_VARARGS, json_front_doc},
    {"json_values", json_values, METH_VARARGS, json_values_doc},
    {"json_close", json_close, METH_VARARGS, json_close_doc},
    {"json_children", json_children, METH_VARARGS, json_children_doc},
    {"md_lines", md_lines, METH_VARARGS, md_lines_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot kernels_slots[] = {
    {0, NULL},
};

static struct PyModuleDef kernels_module = {
    PyModuleDef_HEAD_INIT,
    "sdk.chunking._kernels",
    "The chunking engine's kernels over a text's code units and arrays of integers (optional: each has its reference in Python).",
    0,
    kernels_methods,
    kernels_slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    return PyModuleDef_Init(&kernels_module);
}
