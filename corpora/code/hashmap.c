/* hashmap.c: open addressing string -> int map. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LOAD_NUM 3
#define LOAD_DEN 4

/* One slot of the table; key == NULL means empty. */
struct entry {
    char *key;
    int value;
};

typedef struct {
    struct entry *slots;
    size_t cap;
    size_t len;
} hashmap;

/* FNV-1a, 64 bit. */
static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ULL;
    }
    return h;
}

static int grow(hashmap *m);

hashmap *hashmap_new(size_t cap)
{
    hashmap *m = malloc(sizeof *m);
    if (!m)
        return NULL;
    m->slots = calloc(cap, sizeof *m->slots);
    m->cap = cap;
    m->len = 0;
    return m;
}

int hashmap_put(hashmap *m, const char *key, int value)
{
    if ((m->len + 1) * LOAD_DEN > m->cap * LOAD_NUM && grow(m) != 0)
        return -1;
    size_t i = hash(key) % m->cap;
    while (m->slots[i].key != NULL) {
        if (strcmp(m->slots[i].key, key) == 0) {
            m->slots[i].value = value; /* overwrite */
            return 0;
        }
        i = (i + 1) % m->cap;
    }
    m->slots[i].key = strdup(key);
    m->slots[i].value = value;
    m->len++;
    return 0;
}

static int grow(hashmap *m)
{
    hashmap bigger = {calloc(m->cap * 2, sizeof(struct entry)), m->cap * 2, 0};
    if (!bigger.slots)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slots[i].key) {
            hashmap_put(&bigger, m->slots[i].key, m->slots[i].value);
            free(m->slots[i].key);
        }
    }
    free(m->slots);
    *m = bigger;
    return 0;
}

/* ユーザー名の表: 文字列はUTF-8のまま扱う */
static const char *const names[] = {"山田", "佐藤", "鈴木", "高橋", "田中", "伊藤", "渡辺", "山本"};
