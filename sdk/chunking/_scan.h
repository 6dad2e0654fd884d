/* Scans over a text's code units and reads of integer arrays, shared by _native.c and
 * _kernels.c (limited-API calls only): the includer defines SCAN_READ(kind, data, i),
 * the code point at i of the text's storage. */
#ifndef SEAM_SCAN_H
#define SEAM_SCAN_H

static inline Py_ssize_t
utf8_width(Py_UCS4 c)
{
    /* A lone surrogate counts 3 bytes: the width of its replacement character, and of
     * the surrogate itself under "surrogatepass". */
    return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

static inline int
json_ws(Py_UCS4 c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static Py_ssize_t
skip_json_ws(int kind, const void *data, Py_ssize_t pos, Py_ssize_t n)
{
    while (pos < n && json_ws(SCAN_READ(kind, data, pos))) {
        pos++;
    }
    return pos;
}

static Py_ssize_t
json_invalid(Py_ssize_t pos, const char *what)
{
    PyErr_Format(PyExc_ValueError, "no JSON %s at offset %zd", what, pos);
    return -1;
}

/* The end of the string token at ``pos`` ("[^"\\]*(?:\\.[^"\\]*)*"). */
static Py_ssize_t
string_end(int kind, const void *data, Py_ssize_t pos, Py_ssize_t n)
{
    if (pos >= n || SCAN_READ(kind, data, pos) != '"') {
        return json_invalid(pos, "string");
    }
    Py_ssize_t i = pos + 1;
    while (i < n) {
        Py_UCS4 c = SCAN_READ(kind, data, i);
        if (c == '"') {
            return i + 1;
        }
        if (c == '\\') {
            if (i + 1 >= n) {
                break;
            }
            i += 2;
        }
        else {
            i++;
        }
    }
    return json_invalid(pos, "string");
}

static int
literal_at(int kind, const void *data, Py_ssize_t pos, Py_ssize_t n, const char *word)
{
    Py_ssize_t len = (Py_ssize_t)strlen(word);
    if (pos + len > n) {
        return 0;
    }
    for (Py_ssize_t k = 0; k < len; k++) {
        if (SCAN_READ(kind, data, pos + k) != (Py_UCS4)(unsigned char)word[k]) {
            return 0;
        }
    }
    return 1;
}

static inline int
digit_at(int kind, const void *data, Py_ssize_t i, Py_ssize_t n)
{
    if (i >= n) {
        return 0;
    }
    Py_UCS4 c = SCAN_READ(kind, data, i);
    return c >= '0' && c <= '9';
}

/* The end of the scalar at ``pos``, as the pattern
 * -?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|NaN|-?Infinity
 * matches it (optional parts only where they complete). */
static Py_ssize_t
scalar_end(int kind, const void *data, Py_ssize_t pos, Py_ssize_t n)
{
    Py_ssize_t i = pos;
    if (i < n && SCAN_READ(kind, data, i) == '-') {
        i++;
    }
    if (digit_at(kind, data, i, n)) {
        if (SCAN_READ(kind, data, i) == '0') {
            i++;
        }
        else {
            while (digit_at(kind, data, i, n)) {
                i++;
            }
        }
        if (i < n && SCAN_READ(kind, data, i) == '.' && digit_at(kind, data, i + 1, n)) {
            i += 2;
            while (digit_at(kind, data, i, n)) {
                i++;
            }
        }
        if (i < n && (SCAN_READ(kind, data, i) == 'e' || SCAN_READ(kind, data, i) == 'E')) {
            Py_ssize_t j = i + 1;
            if (j < n && (SCAN_READ(kind, data, j) == '+' || SCAN_READ(kind, data, j) == '-')) {
                j++;
            }
            if (digit_at(kind, data, j, n)) {
                while (digit_at(kind, data, j, n)) {
                    j++;
                }
                i = j;
            }
        }
        return i;
    }
    if (literal_at(kind, data, i, n, "Infinity")) {
        return i + 8;
    }
    if (i == pos) {
        static const char *words[] = {"true", "false", "null", "NaN"};
        for (int w = 0; w < 4; w++) {
            if (literal_at(kind, data, pos, n, words[w])) {
                return pos + (Py_ssize_t)strlen(words[w]);
            }
        }
    }
    return json_invalid(pos, "value");
}

/* str.find(ch, a, b) over the text: the first offset of ``ch`` in [a, b), -1 if none. */
static Py_ssize_t
find_char(int kind, const void *data, Py_ssize_t n, Py_UCS4 ch, Py_ssize_t a, Py_ssize_t b)
{
    if (a < 0) {
        a = a + n < 0 ? 0 : a + n;
    }
    if (b < 0) {
        b = b + n < 0 ? 0 : b + n;
    }
    if (b > n) {
        b = n;
    }
    for (Py_ssize_t i = a; i < b; i++) {
        if (SCAN_READ(kind, data, i) == ch) {
            return i;
        }
    }
    return -1;
}

/* Values of a buffer of 4- or 8-byte integers, or of a list or tuple of ints. */
typedef struct {
    Py_buffer view;
    int has_view;
    PyObject *tuple;
    const void *items;
    Py_ssize_t len;
    int width;
} Ints;

static int
ints_open(Ints *v, PyObject *obj, const char *what)
{
    memset(v, 0, sizeof(*v));
    if (PyList_Check(obj) || PyTuple_Check(obj)) {
        v->tuple = PySequence_Tuple(obj); /* a copy: converting an item may run Python code */
        if (v->tuple == NULL) {
            return -1;
        }
        v->len = PyTuple_Size(v->tuple);
        return 0;
    }
    if (PyObject_GetBuffer(obj, &v->view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Format(PyExc_TypeError, "%s must be a list of ints or a buffer of 4- or 8-byte integers", what);
        }
        return -1;
    }
    v->has_view = 1;
    const char *f = v->view.format ? v->view.format : "B";
    if (f[0] == '@' || f[0] == '=' || f[0] == '<') {
        f++;
    }
    if ((f[0] == 'i' || f[0] == 'l' || f[0] == 'q') && f[1] == 0 && (v->view.itemsize == 4 || v->view.itemsize == 8)) {
        v->width = (int)v->view.itemsize;
        v->items = v->view.buf;
        v->len = v->view.len / v->view.itemsize;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s must be a list of ints or a buffer of 4- or 8-byte integers", what);
    PyBuffer_Release(&v->view);
    v->has_view = 0;
    return -1;
}

static void
ints_close(Ints *v)
{
    if (v->has_view) {
        PyBuffer_Release(&v->view);
    }
    Py_XDECREF(v->tuple);
}

/* The value at ``i`` of a buffer of 4- or 8-byte integers (not a list; a buffer need
 * not be aligned). */
static inline long long
buffer_at(const Ints *v, Py_ssize_t i)
{
    if (v->width == 8) {
        int64_t at;
        memcpy(&at, (const char *)v->items + i * 8, 8);
        return at;
    }
    int32_t at;
    memcpy(&at, (const char *)v->items + i * 4, 4);
    return at;
}

/* The value at ``i``; -1 with an exception set when it is not an int (lists only). */
static inline long long
ints_at(const Ints *v, Py_ssize_t i)
{
    if (v->tuple != NULL) {
        return PyLong_AsLongLong(PyTuple_GetItem(v->tuple, i));
    }
    return buffer_at(v, i);
}

#endif /* SEAM_SCAN_H */
