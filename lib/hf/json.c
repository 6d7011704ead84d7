/* SPDX-License-Identifier: MIT */
/* hf/json.h on json-c (0.14 or later, for uint64 integers; Debian 12 has
 * 0.16), behind the strict check of hf/scan.h. json-c allocates its trees
 * with malloc; they live only for the duration of one reader call. */
#include "hf/json.h"

#include "hf/scan.h"

#include <json-c/json.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define OBJ(v) ((struct json_object *)(v))
#define COBJ(v) ((const struct json_object *)(v))

int llmem_hf_json_parse(const char *text, size_t len, hf_jv **root, char *err, size_t errcap)
{
    *root = NULL;
    if (len > INT_MAX) {
        snprintf(err, errcap, "JSON text of %zu bytes is too large", len);
        return -1;
    }
    /* RFC 8259 first: json-c's strict mode lets "1.", NaN, raw control
     * characters and invalid UTF-8 through (hf/scan.h). */
    if (llmem_hf_json_check(text, len, err, errcap) != 0)
        return -1;
    struct json_tokener *tok = json_tokener_new_ex(HF_JSON_MAX_DEPTH);
    if (tok == NULL) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    struct json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    /* A top-level number or literal ending the text could go on in a later
     * chunk: a space tells json-c it is complete. */
    if (e == json_tokener_continue) {
        obj = json_tokener_parse_ex(tok, " ", 1);
        e = json_tokener_get_error(tok);
    }
    if (e != json_tokener_success) {
        /* The text passed the check above: only a failing allocation gets here. */
        snprintf(err, errcap, "cannot parse the JSON text: %s", json_tokener_error_desc(e));
        json_object_put(obj);
        json_tokener_free(tok);
        return -1;
    }
    json_tokener_free(tok);
    *root = (hf_jv *)obj;
    return 0;
}

void llmem_hf_json_free(hf_jv *root)
{
    json_object_put(OBJ(root));
}

int llmem_hf_json_type(const hf_jv *v)
{
    switch (json_object_get_type(COBJ(v))) {
    case json_type_boolean: return HF_JBOOL;
    case json_type_int: return HF_JINT;
    case json_type_double: return HF_JDOUBLE;
    case json_type_string: return HF_JSTRING;
    case json_type_array: return HF_JARRAY;
    case json_type_object: return HF_JOBJECT;
    case json_type_null:
    default: return HF_JNULL;
    }
}

int llmem_hf_json_member(const hf_jv *obj, const char *key, const hf_jv **out)
{
    struct json_object *v = NULL;
    *out = NULL;
    if (!json_object_is_type(COBJ(obj), json_type_object))
        return 0;
    if (!json_object_object_get_ex(COBJ(obj), key, &v))
        return 0;
    *out = (const hf_jv *)v;
    return 1;
}

size_t llmem_hf_json_object_size(const hf_jv *obj)
{
    if (!json_object_is_type(COBJ(obj), json_type_object))
        return 0;
    return (size_t)json_object_object_length(COBJ(obj));
}

int llmem_hf_json_each(const hf_jv *obj, int (*fn)(void *user, const char *key, const hf_jv *value),
                 void *user)
{
    if (!json_object_is_type(COBJ(obj), json_type_object))
        return 0;
    struct lh_table *table = json_object_get_object(COBJ(obj));
    for (struct lh_entry *e = table->head; e != NULL; e = e->next) {
        int rc = fn(user, (const char *)lh_entry_k(e), (const hf_jv *)lh_entry_v(e));
        if (rc != 0)
            return rc;
    }
    return 0;
}

int llmem_hf_json_int64(const hf_jv *v, int64_t *out)
{
    if (!json_object_is_type(COBJ(v), json_type_int))
        return -1;
    int64_t i = json_object_get_int64(COBJ(v));
    /* json-c clamps integers beyond int64 to INT64_MAX / INT64_MIN; INT64_MIN
     * itself is refused with them (no field can use it). */
    if ((i == INT64_MAX && json_object_get_uint64(COBJ(v)) != (uint64_t)INT64_MAX) ||
        i == INT64_MIN)
        return -1;
    *out = i;
    return 0;
}

int llmem_hf_json_uint64(const hf_jv *v, uint64_t *out)
{
    if (!json_object_is_type(COBJ(v), json_type_int))
        return -1;
    if (json_object_get_int64(COBJ(v)) < 0)
        return -1;
    *out = json_object_get_uint64(COBJ(v));
    return 0;
}

int llmem_hf_json_number(const hf_jv *v, double *out)
{
    if (!json_object_is_type(COBJ(v), json_type_int) &&
        !json_object_is_type(COBJ(v), json_type_double))
        return -1;
    *out = json_object_get_double(COBJ(v));
    return 0;
}

const char *llmem_hf_json_real_text(const hf_jv *v)
{
    /* json-c's tokener keeps a parsed double's own text as its serialization. */
    if (!json_object_is_type(COBJ(v), json_type_double))
        return "";
    const char *s = json_object_to_json_string_ext(OBJ(v), JSON_C_TO_STRING_PLAIN);
    return s != NULL ? s : "";
}

int llmem_hf_json_bool(const hf_jv *v)
{
    if (!json_object_is_type(COBJ(v), json_type_boolean))
        return -1;
    return json_object_get_boolean(COBJ(v)) ? 1 : 0;
}

const char *llmem_hf_json_string(const hf_jv *v)
{
    if (!json_object_is_type(COBJ(v), json_type_string))
        return NULL;
    const char *s = json_object_get_string(OBJ(v));
    /* A "\u0000" escape would silently cut the C string short. */
    if (strlen(s) != (size_t)json_object_get_string_len(COBJ(v)))
        return NULL;
    return s;
}

size_t llmem_hf_json_array_size(const hf_jv *v)
{
    if (!json_object_is_type(COBJ(v), json_type_array))
        return 0;
    return json_object_array_length(COBJ(v));
}

const hf_jv *llmem_hf_json_array_at(const hf_jv *v, size_t i)
{
    if (i >= llmem_hf_json_array_size(v))
        return NULL;
    return (const hf_jv *)json_object_array_get_idx(COBJ(v), i);
}
