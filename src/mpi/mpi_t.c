/* The MPI tool information interface (MPI-3.1 section 14.3, MPI_T_*): what
 * a tool or a program can learn about the library's variables, before
 * MPI_Init and after MPI_Finalize too. The control variables are
 * bitmover's parameters (the param tables every component registers,
 * src/util/params.h): one control variable per BM_* environment variable,
 * named as the variable, in one category per component ("pml",
 * "btl/tcp"...), with the type, help text, accepted values and default the
 * table declares, an enumeration for the enum-typed ones, and as value the
 * one in effect: the environment's, else the default (components read the
 * environment once at MPI_Init, so that is the value they use). They are
 * read-only (scope MPI_T_SCOPE_READONLY; MPI_T_cvar_write answers
 * MPI_T_ERR_CVAR_SET_NEVER): set them in the environment, as bm_info
 * --params lists them. There are no performance variables (the standard
 * allows none): sessions exist and work, every performance variable index
 * is invalid. MPI_T calls never go through error handlers: they return
 * their MPI_T_ERR_* class. A lock makes them safe from any thread. */
#include "mpi/mpi_internal.h"
#include "util/params.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(size_t) == sizeof(unsigned long), "size parameters are MPI_UNSIGNED_LONG");

#define T_MAGIC_CVAR    0x4d505443u /* "MPTC" */
#define T_MAGIC_SESSION 0x4d505453u /* "MPTS" */

struct bm_mpi_t_enum {
    char name[64]; /* the parameter's name */
    int n;
    char **items; /* the choices, value = index */
};

struct bm_mpi_t_cvar_handle {
    uint32_t magic;
    int index;
    int count; /* elements of the value (a string: its length + 1 at allocation) */
};

struct bm_mpi_t_pvar_session {
    uint32_t magic;
};

/* MPI_T_PVAR_ALL_HANDLES points here; no other performance variable handle
 * exists. */
struct bm_mpi_t_pvar_handle {
    int unused;
};
struct bm_mpi_t_pvar_handle bm_mpi_t_pvar_all_handles_obj;

struct cvar {
    const struct bm_param *p;
    int cat;
    struct bm_mpi_t_enum *en; /* BM_PARAM_ENUM only */
};

struct category {
    const char *component;
    int first, count; /* its control variables: cvars[first .. first + count) */
};

static pthread_mutex_t t_lock = PTHREAD_MUTEX_INITIALIZER;
static int t_inits; /* MPI_T_init_thread calls not yet matched by MPI_T_finalize */
static struct cvar *cvars;
static int ncvars;
static struct category *cats;
static int ncats;

static void enum_free(struct bm_mpi_t_enum *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->n; i++)
        free(e->items[i]);
    free(e->items);
    free(e);
}

/* The choices "a|b|c" as items 0, 1, 2. */
static struct bm_mpi_t_enum *enum_make(const struct bm_param *p)
{
    struct bm_mpi_t_enum *e = calloc(1, sizeof(*e));
    const char *c = p->choices ? p->choices : "";
    if (!e)
        return NULL;
    snprintf(e->name, sizeof(e->name), "%s", p->name);
    int n = 1;
    for (const char *s = c; *s; s++)
        n += *s == '|';
    e->items = calloc((size_t)n, sizeof(*e->items));
    if (!e->items) {
        free(e);
        return NULL;
    }
    for (const char *s = c;; e->n++) {
        size_t len = strcspn(s, "|");
        if (!(e->items[e->n] = strndup(s, len))) {
            enum_free(e);
            return NULL;
        }
        if (!s[len]) {
            e->n++;
            break;
        }
        s += len + 1;
    }
    return e;
}

static void count_table(const struct bm_param_table *t, void *arg)
{
    (void)arg;
    ncats++;
    ncvars += (int)t->count;
}

/* Fills cats and cvars in the registry's stable order (by component). */
static void add_table(const struct bm_param_table *t, void *arg)
{
    bool *failed = arg;
    /* Tables of one component (registered from several files) are
     * visited one after the other: one category. */
    struct category *c = &cats[ncats];
    if (ncats > 0 && strcmp(cats[ncats - 1].component, t->component) == 0)
        c = &cats[--ncats];
    else {
        c->component = t->component;
        c->first = ncvars;
        c->count = 0;
    }
    c->count += (int)t->count;
    for (size_t i = 0; i < t->count; i++) {
        struct cvar *v = &cvars[ncvars++];
        v->p = &t->params[i];
        v->cat = ncats;
        if (v->p->type == BM_PARAM_ENUM && !(v->en = enum_make(v->p)))
            *failed = true;
    }
    ncats++;
}

static void tables_free(void)
{
    for (int i = 0; i < ncvars; i++)
        enum_free(cvars[i].en);
    free(cvars);
    free(cats);
    cvars = NULL;
    cats = NULL;
    ncvars = ncats = 0;
}

static int tables_build(void)
{
    bool failed = false;
    bm_util_params_foreach(count_table, NULL);
    cvars = calloc((size_t)(ncvars ? ncvars : 1), sizeof(*cvars));
    cats = calloc((size_t)(ncats ? ncats : 1), sizeof(*cats));
    if (!cvars || !cats) {
        tables_free();
        return MPI_T_ERR_MEMORY;
    }
    ncvars = ncats = 0;
    bm_util_params_foreach(add_table, &failed);
    if (failed) {
        tables_free();
        return MPI_T_ERR_MEMORY;
    }
    return MPI_SUCCESS;
}

/* Every call but init: take the lock, check the interface is up. */
static int enter(void)
{
    pthread_mutex_lock(&t_lock);
    if (t_inits == 0) {
        pthread_mutex_unlock(&t_lock);
        return MPI_T_ERR_NOT_INITIALIZED;
    }
    return MPI_SUCCESS;
}

static int leave(int rc)
{
    pthread_mutex_unlock(&t_lock);
    return rc;
}

/* The standard's string convention: *len is the buffer's size on input; a
 * NULL buffer or a size of 0 asks only for the length (with the NUL); a
 * short buffer gets the string cut, NUL-terminated; *len returns what was
 * stored (with the NUL), or the full length when nothing was. */
static void put_string(const char *s, char *buf, int *len)
{
    if (!len)
        return;
    int need = (int)strlen(s) + 1;
    if (!buf || *len <= 0) {
        *len = need;
        return;
    }
    int n = need < *len ? need : *len;
    memcpy(buf, s, (size_t)n - 1);
    buf[n - 1] = '\0';
    *len = n;
}

/* MPI_T_{cvar,pvar,category}_get_num: one count. */
static int get_num(int *out, const int *count)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!out)
        return leave(MPI_T_ERR_INVALID);
    *out = *count;
    return leave(MPI_SUCCESS);
}

/* MPI_T_{cvar,category}_get_index: the index whose name_of is name. */
static const char *cvar_name(int i)
{
    return cvars[i].p->name;
}

static const char *category_name(int i)
{
    return cats[i].component;
}

static int get_index(const char *name, int *out, const int *n, const char *(*name_of)(int))
{
    int rc = enter();
    if (rc)
        return rc;
    if (!name || !out)
        return leave(MPI_T_ERR_INVALID);
    for (int i = 0; i < *n; i++)
        if (strcmp(name_of(i), name) == 0) {
            *out = i;
            return leave(MPI_SUCCESS);
        }
    return leave(MPI_T_ERR_INVALID_NAME);
}

int PMPI_T_init_thread(int required, int *provided)
{
    if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE || !provided)
        return MPI_T_ERR_INVALID;
    pthread_mutex_lock(&t_lock);
    int rc = t_inits == 0 ? tables_build() : MPI_SUCCESS;
    if (rc == MPI_SUCCESS) {
        t_inits++;
        *provided = MPI_THREAD_MULTIPLE; /* every call takes the lock */
    }
    return leave(rc);
}
BM_MPI_ALIAS(T_init_thread);

int PMPI_T_finalize(void)
{
    int rc = enter();
    if (rc)
        return rc;
    if (--t_inits == 0)
        tables_free();
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_finalize);

/* ---- enumerations ------------------------------------------------------ */

static bool enum_known(MPI_T_enum e)
{
    for (int i = 0; i < ncvars; i++)
        if (cvars[i].en && cvars[i].en == e)
            return true;
    return false;
}

int PMPI_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!enum_known(enumtype))
        return leave(MPI_T_ERR_INVALID_HANDLE);
    if (!num)
        return leave(MPI_T_ERR_INVALID);
    *num = enumtype->n;
    put_string(enumtype->name, name, name_len);
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_enum_get_info);

int PMPI_T_enum_get_item(MPI_T_enum enumtype, int index, int *value, char *name, int *name_len)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!enum_known(enumtype))
        return leave(MPI_T_ERR_INVALID_HANDLE);
    if (index < 0 || index >= enumtype->n)
        return leave(MPI_T_ERR_INVALID_ITEM);
    if (!value)
        return leave(MPI_T_ERR_INVALID);
    *value = index;
    put_string(enumtype->items[index], name, name_len);
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_enum_get_item);

/* ---- control variables ------------------------------------------------- */

static MPI_Datatype cvar_type(const struct bm_param *p)
{
    switch (p->type) {
    case BM_PARAM_SIZE:
        return MPI_UNSIGNED_LONG;
    case BM_PARAM_STRING:
        return MPI_CHAR;
    case BM_PARAM_DOUBLE:
        return MPI_DOUBLE;
    case BM_PARAM_INT:
    case BM_PARAM_BOOL:
    case BM_PARAM_ENUM:
        break;
    }
    return MPI_INT;
}

/* The value in effect as text: the environment's when valid (an invalid
 * one stops MPI_Init with a message; before that the default counts). */
static const char *cvar_text(const struct bm_param *p)
{
    const char *env = getenv(p->name);
    char err[256];
    if (env && bm_util_param_check(p, env, err, sizeof(err)) == BM_OK)
        return env;
    return p->def ? p->def : "";
}

int PMPI_T_cvar_get_num(int *num_cvar)
{
    return get_num(num_cvar, &ncvars);
}
BM_MPI_ALIAS(T_cvar_get_num);

int PMPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity,
                         MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                         int *bind, int *scope)
{
    int rc = enter();
    if (rc)
        return rc;
    if (cvar_index < 0 || cvar_index >= ncvars)
        return leave(MPI_T_ERR_INVALID_INDEX);
    const struct cvar *v = &cvars[cvar_index];
    const struct bm_param *p = v->p;
    put_string(p->name, name, name_len);
    if (verbosity)
        *verbosity = p->flags & BM_PARAM_F_DEBUG ? MPI_T_VERBOSITY_MPIDEV_DETAIL
                                                 : MPI_T_VERBOSITY_TUNER_BASIC;
    if (datatype)
        *datatype = cvar_type(p);
    if (enumtype)
        *enumtype = v->en ? v->en : MPI_T_ENUM_NULL;
    if (desc_len) {
        char accepted[256], text[1024];
        bm_util_param_describe_accepted(p, accepted, sizeof(accepted));
        snprintf(text, sizeof(text), "%s (%s; default %s; set in the environment)",
                 p->help ? p->help : "", accepted, p->def ? p->def : "none");
        put_string(text, desc, desc_len);
    }
    if (bind)
        *bind = MPI_T_BIND_NO_OBJECT;
    if (scope)
        *scope = MPI_T_SCOPE_READONLY;
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_cvar_get_info);

int PMPI_T_cvar_get_index(const char *name, int *cvar_index)
{
    return get_index(name, cvar_index, &ncvars, cvar_name);
}
BM_MPI_ALIAS(T_cvar_get_index);

int PMPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle,
                             int *count)
{
    (void)obj_handle; /* every variable is bound to no object: ignored, as the standard says */
    int rc = enter();
    if (rc)
        return rc;
    if (cvar_index < 0 || cvar_index >= ncvars)
        return leave(MPI_T_ERR_INVALID_INDEX);
    if (!handle || !count)
        return leave(MPI_T_ERR_INVALID);
    struct bm_mpi_t_cvar_handle *h = malloc(sizeof(*h));
    if (!h)
        return leave(MPI_T_ERR_MEMORY);
    const struct bm_param *p = cvars[cvar_index].p;
    h->magic = T_MAGIC_CVAR;
    h->index = cvar_index;
    h->count = p->type == BM_PARAM_STRING ? (int)strlen(cvar_text(p)) + 1 : 1;
    *handle = h;
    *count = h->count;
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_cvar_handle_alloc);

static bool cvar_handle_ok(MPI_T_cvar_handle h)
{
    return h && h->magic == T_MAGIC_CVAR && h->index >= 0 && h->index < ncvars;
}

int PMPI_T_cvar_handle_free(MPI_T_cvar_handle *handle)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!handle || !cvar_handle_ok(*handle))
        return leave(MPI_T_ERR_INVALID_HANDLE);
    (*handle)->magic = 0;
    free(*handle);
    *handle = MPI_T_CVAR_HANDLE_NULL;
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_cvar_handle_free);

int PMPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!cvar_handle_ok(handle))
        return leave(MPI_T_ERR_INVALID_HANDLE);
    if (!buf)
        return leave(MPI_T_ERR_INVALID);
    const struct bm_param *p = cvars[handle->index].p;
    const char *text = cvar_text(p);
    union {
        int i;
        size_t z;
        bool b;
        const char *s;
        double d;
    } v;
    char err[256];
    if (p->type == BM_PARAM_STRING) {
        /* at most the count the handle was given (the value cannot grow
         * after MPI_Init; before, the environment may have changed) */
        size_t n = strlen(text);
        if (n > (size_t)handle->count - 1)
            n = (size_t)handle->count - 1;
        memcpy(buf, text, n);
        ((char *)buf)[n] = '\0';
        return leave(MPI_SUCCESS);
    }
    if (bm_util_param_parse(p, text, &v, err, sizeof(err)) != BM_OK)
        return leave(MPI_T_ERR_INVALID); /* a default that does not parse: a table bug */
    switch (p->type) {
    case BM_PARAM_INT:
    case BM_PARAM_ENUM:
        memcpy(buf, &v.i, sizeof(int));
        break;
    case BM_PARAM_BOOL: {
        int b = v.b;
        memcpy(buf, &b, sizeof(int));
        break;
    }
    case BM_PARAM_SIZE: {
        unsigned long z = v.z;
        memcpy(buf, &z, sizeof(z));
        break;
    }
    case BM_PARAM_DOUBLE:
        memcpy(buf, &v.d, sizeof(double));
        break;
    case BM_PARAM_STRING:
        break;
    }
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_cvar_read);

int PMPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!cvar_handle_ok(handle))
        return leave(MPI_T_ERR_INVALID_HANDLE);
    (void)buf;
    /* Components read their parameters once, from the environment. */
    return leave(MPI_T_ERR_CVAR_SET_NEVER);
}
BM_MPI_ALIAS(T_cvar_write);

/* ---- performance variables: none ---------------------------------------- */

int PMPI_T_pvar_get_num(int *num_pvar)
{
    static const int none = 0;
    return get_num(num_pvar, &none);
}
BM_MPI_ALIAS(T_pvar_get_num);

int PMPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class,
                         MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                         int *bind, int *readonly, int *continuous, int *atomic)
{
    (void)pvar_index, (void)name, (void)name_len, (void)verbosity, (void)var_class;
    (void)datatype, (void)enumtype, (void)desc, (void)desc_len, (void)bind, (void)readonly;
    (void)continuous, (void)atomic;
    int rc = enter();
    return rc ? rc : leave(MPI_T_ERR_INVALID_INDEX);
}
BM_MPI_ALIAS(T_pvar_get_info);

int PMPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!name || !pvar_index || var_class < MPI_T_PVAR_CLASS_STATE ||
        var_class > MPI_T_PVAR_CLASS_GENERIC)
        return leave(MPI_T_ERR_INVALID);
    return leave(MPI_T_ERR_INVALID_NAME);
}
BM_MPI_ALIAS(T_pvar_get_index);

int PMPI_T_pvar_session_create(MPI_T_pvar_session *session)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!session)
        return leave(MPI_T_ERR_INVALID);
    struct bm_mpi_t_pvar_session *s = malloc(sizeof(*s));
    if (!s)
        return leave(MPI_T_ERR_OUT_OF_SESSIONS);
    s->magic = T_MAGIC_SESSION;
    *session = s;
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_pvar_session_create);

static bool session_ok(MPI_T_pvar_session s)
{
    return s && s->magic == T_MAGIC_SESSION;
}

int PMPI_T_pvar_session_free(MPI_T_pvar_session *session)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!session || !session_ok(*session))
        return leave(MPI_T_ERR_INVALID_SESSION);
    (*session)->magic = 0;
    free(*session);
    *session = MPI_T_PVAR_SESSION_NULL;
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_pvar_session_free);

int PMPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                             MPI_T_pvar_handle *handle, int *count)
{
    (void)pvar_index, (void)obj_handle, (void)handle, (void)count;
    int rc = enter();
    if (rc)
        return rc;
    return leave(session_ok(session) ? MPI_T_ERR_INVALID_INDEX : MPI_T_ERR_INVALID_SESSION);
}
BM_MPI_ALIAS(T_pvar_handle_alloc);

/* A handle operation: with no variables, only MPI_T_PVAR_ALL_HANDLES
 * names something (nothing), and only where all_ok (start, stop, reset). */
static int pvar_op(MPI_T_pvar_session session, MPI_T_pvar_handle handle, bool all_ok)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!session_ok(session))
        return leave(MPI_T_ERR_INVALID_SESSION);
    if (all_ok && handle == MPI_T_PVAR_ALL_HANDLES)
        return leave(MPI_SUCCESS);
    return leave(MPI_T_ERR_INVALID_HANDLE);
}

int PMPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)
{
    return pvar_op(session, handle ? *handle : MPI_T_PVAR_HANDLE_NULL, false);
}
BM_MPI_ALIAS(T_pvar_handle_free);

int PMPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return pvar_op(session, handle, true);
}
BM_MPI_ALIAS(T_pvar_start);

int PMPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return pvar_op(session, handle, true);
}
BM_MPI_ALIAS(T_pvar_stop);

int PMPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return pvar_op(session, handle, true);
}
BM_MPI_ALIAS(T_pvar_reset);

int PMPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    (void)buf;
    return pvar_op(session, handle, false);
}
BM_MPI_ALIAS(T_pvar_read);

int PMPI_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf)
{
    (void)buf;
    return pvar_op(session, handle, false);
}
BM_MPI_ALIAS(T_pvar_write);

int PMPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    (void)buf;
    return pvar_op(session, handle, false);
}
BM_MPI_ALIAS(T_pvar_readreset);

/* ---- categories: one per component ------------------------------------- */

int PMPI_T_category_get_num(int *num_cat)
{
    return get_num(num_cat, &ncats);
}
BM_MPI_ALIAS(T_category_get_num);

int PMPI_T_category_get_info(int cat_index, char *name, int *name_len, char *desc, int *desc_len,
                             int *num_cvars, int *num_pvars, int *num_categories)
{
    int rc = enter();
    if (rc)
        return rc;
    if (cat_index < 0 || cat_index >= ncats)
        return leave(MPI_T_ERR_INVALID_INDEX);
    const struct category *c = &cats[cat_index];
    char text[256];
    snprintf(text, sizeof(text), "the parameters of bitmover's %s component", c->component);
    put_string(c->component, name, name_len);
    put_string(text, desc, desc_len);
    if (num_cvars)
        *num_cvars = c->count;
    if (num_pvars)
        *num_pvars = 0;
    if (num_categories)
        *num_categories = 0;
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_category_get_info);

int PMPI_T_category_get_index(const char *name, int *cat_index)
{
    return get_index(name, cat_index, &ncats, category_name);
}
BM_MPI_ALIAS(T_category_get_index);

int PMPI_T_category_get_cvars(int cat_index, int len, int indices[])
{
    int rc = enter();
    if (rc)
        return rc;
    if (cat_index < 0 || cat_index >= ncats)
        return leave(MPI_T_ERR_INVALID_INDEX);
    if (len < 0 || (len > 0 && !indices))
        return leave(MPI_T_ERR_INVALID);
    for (int i = 0; i < len && i < cats[cat_index].count; i++)
        indices[i] = cats[cat_index].first + i;
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_category_get_cvars);

/* No category holds performance variables or other categories. */
static int category_none(int cat_index, int len, const int indices[])
{
    int rc = enter();
    if (rc)
        return rc;
    if (cat_index < 0 || cat_index >= ncats)
        return leave(MPI_T_ERR_INVALID_INDEX);
    if (len < 0 || (len > 0 && !indices))
        return leave(MPI_T_ERR_INVALID);
    return leave(MPI_SUCCESS);
}

int PMPI_T_category_get_pvars(int cat_index, int len, int indices[])
{
    return category_none(cat_index, len, indices);
}
BM_MPI_ALIAS(T_category_get_pvars);

int PMPI_T_category_get_categories(int cat_index, int len, int indices[])
{
    return category_none(cat_index, len, indices);
}
BM_MPI_ALIAS(T_category_get_categories);

int PMPI_T_category_changed(int *stamp)
{
    int rc = enter();
    if (rc)
        return rc;
    if (!stamp)
        return leave(MPI_T_ERR_INVALID);
    *stamp = 0; /* the tables are fixed when the library is linked */
    return leave(MPI_SUCCESS);
}
BM_MPI_ALIAS(T_category_changed);
