/* Native passes of the chunking engine (optional: sdk.chunking falls back to Python
 * and numpy when this module is not built, with the same results).
 *
 * char_ends: where each token of a text ends, in characters (code points). The engine
 * works in the text's own offsets; the encoder gives token ids, whose UTF-8 lengths are
 * summed here and mapped to characters by walking the text once alongside them (the
 * UTF-8 width of a code point is known from its value, so the text is never encoded).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static inline Py_ssize_t
utf8_width(Py_UCS4 c)
{
    /* A lone surrogate counts 3 bytes: the width of its replacement character, and of
     * the surrogate itself under "surrogatepass". */
    return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

PyDoc_STRVAR(char_ends_doc,
"char_ends(text, ids, lengths, start, wide) -> bytes\n\n"
"The end of each token of ``text`` in characters, counted from ``start``, as machine\n"
"integers (8 bytes each when ``wide``, else 4): token ``ids`` (a sequence of ints) with\n"
"UTF-8 ``lengths`` (a buffer of int32 indexed by id). A token that ends inside a\n"
"character's bytes ends after that character; ends past the text stop at its end.");

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
    PyObject *result = NULL;
    /* A list is used as it is; any other sequence of ints is listed once. */
    PyObject *ids = PySequence_Fast(sequence, "token ids must be a sequence of ints");
    if (ids == NULL) {
        PyBuffer_Release(&lengths);
        return NULL;
    }
    if (lengths.len % 4 != 0) {
        PyErr_SetString(PyExc_ValueError, "lengths must be 4-byte integers");
        goto done;
    }
    const int32_t *table = (const int32_t *)lengths.buf;
    Py_ssize_t ntable = lengths.len / 4;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(ids);
    Py_ssize_t width = wide ? 8 : 4;
    if (n > PY_SSIZE_T_MAX / width) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, n * width);
    if (result == NULL) {
        goto done;
    }
    char *out = PyBytes_AS_STRING(result);
    Py_ssize_t nchars = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    int ascii = PyUnicode_IS_ASCII(text);
    Py_ssize_t ci = 0;          /* characters that start before ``bend`` */
    long long cbyte = 0;        /* the UTF-8 offset where character ``ci`` starts */
    long long bend = 0;         /* the UTF-8 end of the tokens so far */
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(ids, k);
        Py_ssize_t id = PyLong_AsSsize_t(item);
        if (id == -1 && PyErr_Occurred()) {
            Py_CLEAR(result);
            goto done;
        }
        if (id < 0 || id >= ntable) {
            PyErr_Format(PyExc_ValueError, "token id %zd is outside the table of %zd lengths", id, ntable);
            Py_CLEAR(result);
            goto done;
        }
        bend += table[id];
        if (ascii) {
            ci = bend < (long long)nchars ? (Py_ssize_t)bend : nchars;
        }
        else {
            while (ci < nchars && cbyte < bend) {
                cbyte += utf8_width(PyUnicode_READ(kind, data, ci));
                ci++;
            }
        }
        long long end = (long long)ci + start;
        if (wide) {
            int64_t v = (int64_t)end;
            memcpy(out + k * 8, &v, 8);
        }
        else {
            if (end > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "a token end does not fit 4 bytes");
                Py_CLEAR(result);
                goto done;
            }
            int32_t v = (int32_t)end;
            memcpy(out + k * 4, &v, 4);
        }
    }
done:
    Py_DECREF(ids);
    PyBuffer_Release(&lengths);
    return result;
}

PyDoc_STRVAR(close_brackets_doc,
"close_brackets(text, start, close) -> int\n\n"
"The offset of the bracket that closes the JSON container opening at ``start``; every\n"
"container closed on the way is recorded in the dict ``close`` (opening offset ->\n"
"closing offset). Brackets inside strings are skipped (a backslash escapes the next\n"
"character). ValueError when the container or a string in it is not closed.");

static PyObject *
close_brackets(PyObject *self, PyObject *args)
{
    PyObject *text, *close;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "UnO!:close_brackets", &text, &start, &PyDict_Type, &close)) {
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (start < 0 || start >= n) {
        PyErr_Format(PyExc_ValueError, "unbalanced JSON container at offset %zd", start);
        return NULL;
    }
    Py_UCS4 first = PyUnicode_READ(kind, data, start);
    if (first != '[' && first != '{') {
        PyErr_Format(PyExc_ValueError, "unbalanced JSON container at offset %zd", start);
        return NULL;
    }
    /* The open containers: a stack that grows as deep as the nesting. */
    Py_ssize_t cap = 64, depth = 1;
    Py_ssize_t *stack = PyMem_Malloc(cap * sizeof(Py_ssize_t));
    if (stack == NULL) {
        return PyErr_NoMemory();
    }
    stack[0] = start;
    Py_ssize_t pos = start + 1;
    while (depth > 0) {
        if (pos >= n) {
            break;
        }
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
                    return PyErr_NoMemory();
                }
                stack = grown;
                cap *= 2;
            }
            stack[depth++] = pos;
        }
        else if (c == ']' || c == '}') {
            Py_ssize_t open = stack[--depth];
            PyObject *key = PyLong_FromSsize_t(open);
            PyObject *value = PyLong_FromSsize_t(pos);
            int failed = key == NULL || value == NULL || PyDict_SetItem(close, key, value) < 0;
            Py_XDECREF(key);
            Py_XDECREF(value);
            if (failed) {
                PyMem_Free(stack);
                return NULL;
            }
            if (depth == 0) {
                PyMem_Free(stack);
                return PyLong_FromSsize_t(pos);
            }
        }
        pos++;
    }
    PyMem_Free(stack);
    PyErr_Format(PyExc_ValueError, "unbalanced JSON container at offset %zd", start);
    return NULL;
}

/* ---- Additive positions (see _junctions.py, whose rules these mirror exactly) ---- */

enum { NEWLINE, SPACE, LETTER, DIGIT, MARK, APOSTROPHE, SLASH, OTHER, UNKNOWN };
enum { RULE_O200K = 1, RULE_CL100K = 2 };
#define REACH 64
#define NOT_YET 0xFF

/* Classes by code point, filled from the Python classifier on first sight of each (the
 * classifier is a pure function of the character). */
static unsigned char *class_cache = NULL;

static int
class_at(PyObject *text, int kind, const void *data, Py_ssize_t i, PyObject *classify)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (i < 0) {
        i += n; /* as Python indexes: the engine never asks before the text's start */
    }
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    unsigned char cls = class_cache[c];
    if (cls != NOT_YET) {
        return cls;
    }
    PyObject *ch = PyUnicode_FromOrdinal((int)c);
    if (ch == NULL) {
        return -1;
    }
    PyObject *got = PyObject_CallOneArg(classify, ch);
    Py_DECREF(ch);
    if (got == NULL) {
        return -1;
    }
    long value = PyLong_AsLong(got);
    Py_DECREF(got);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (value < NEWLINE || value > UNKNOWN) {
        PyErr_Format(PyExc_ValueError, "character class %ld is not one of the junction classes", value);
        return -1;
    }
    class_cache[c] = (unsigned char)value;
    return (int)value;
}

/* 1: additive, 0: not, -1: error. ``p`` is inside the text (0 < p < len, or 0 with the
 * character before it read as Python reads text[-1]). */
static int
additive_at(PyObject *text, int kind, const void *data, Py_ssize_t p, int rule, PyObject *classify)
{
    int a = class_at(text, kind, data, p - 1, classify);
    if (a < 0) {
        return -1;
    }
    int b = class_at(text, kind, data, p, classify);
    if (b < 0) {
        return -1;
    }
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
            Py_ssize_t n = PyUnicode_GET_LENGTH(text);
            for (Py_ssize_t q = p; q < n; q++) {
                int c = class_at(text, kind, data, q, classify);
                if (c < 0) {
                    return -1;
                }
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

static int
prepare(PyObject *text, Py_ssize_t p, int rule)
{
    if (rule != RULE_O200K && rule != RULE_CL100K) {
        PyErr_Format(PyExc_ValueError, "no junction rule %d", rule);
        return -1;
    }
    if (p < 0 || p >= PyUnicode_GET_LENGTH(text)) {
        PyErr_SetString(PyExc_IndexError, "position outside the text");
        return -1;
    }
    if (class_cache == NULL) {
        class_cache = PyMem_RawMalloc(0x110000);
        if (class_cache == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memset(class_cache, NOT_YET, 0x110000);
    }
    return 0;
}

PyDoc_STRVAR(forward_doc,
"forward(text, p, rule, classify) -> int\n\n"
"``p`` if it is additive under ``rule`` (1: o200k_base, 2: cl100k_base), else the first\n"
"additive position after it and before ``p + 64`` (and the text's end), else -1.\n"
"``classify`` gives a character's junction class (asked once per character).");

static PyObject *
forward(PyObject *self, PyObject *args)
{
    PyObject *text, *classify;
    Py_ssize_t p;
    int rule;
    if (!PyArg_ParseTuple(args, "UniO:forward", &text, &p, &rule, &classify) || prepare(text, p, rule) < 0) {
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t end = p + REACH < n ? p + REACH : n;
    for (Py_ssize_t q = p; q < end; q++) {
        int found = additive_at(text, kind, data, q, rule, classify);
        if (found < 0) {
            return NULL;
        }
        if (found) {
            return PyLong_FromSsize_t(q);
        }
    }
    return PyLong_FromLong(-1);
}

PyDoc_STRVAR(backward_doc,
"backward(text, p, rule, classify) -> int\n\n"
"``p`` if it is additive under ``rule``, else the last additive position before it and\n"
"after ``p - 64`` (down to 0), else -1 (see ``forward``).");

static PyObject *
backward(PyObject *self, PyObject *args)
{
    PyObject *text, *classify;
    Py_ssize_t p;
    int rule;
    if (!PyArg_ParseTuple(args, "UniO:backward", &text, &p, &rule, &classify) || prepare(text, p, rule) < 0) {
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    int found = additive_at(text, kind, data, p, rule, classify);
    if (found != 0) {
        return found < 0 ? NULL : PyLong_FromSsize_t(p);
    }
    Py_ssize_t limit = p - REACH > -1 ? p - REACH : -1;
    for (Py_ssize_t q = p - 1; q > limit; q--) {
        found = additive_at(text, kind, data, q, rule, classify);
        if (found < 0) {
            return NULL;
        }
        if (found) {
            return PyLong_FromSsize_t(q);
        }
    }
    return PyLong_FromLong(-1);
}

static PyMethodDef native_methods[] = {
    {"forward", forward, METH_VARARGS, forward_doc},
    {"backward", backward, METH_VARARGS, backward_doc},
    {"char_ends", char_ends, METH_VARARGS, char_ends_doc},
    {"close_brackets", close_brackets, METH_VARARGS, close_brackets_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "sdk.chunking._native",
    "Native passes of the chunking engine (optional; pure-Python fallbacks give the same results).",
    0,
    native_methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModule_Create(&native_module);
}
