/* The registry of objects whose locks are taken across fork(); see zc_fork.h. */
#include "os/zc_fork.h"

#include <stddef.h>

#include "os/zc_os.h"

typedef struct {
    zc_mutex lock;
    zc_fork_guard *first;
} registry;

static registry guards = {ZC_MUTEX_INIT, NULL};
static zc_once handlers_once = ZC_ONCE_INIT;

/* The registry's lock stays held from before the fork until after it, so no guard is added or
 * removed while the guarded locks are held. */
static void before_fork(void)
{
    zc_mutex_lock(&guards.lock);
    for (zc_fork_guard *g = guards.first; g != NULL; g = g->next)
        g->before(g->obj);
}

static void after_fork_in_parent(void)
{
    for (zc_fork_guard *g = guards.first; g != NULL; g = g->next)
        g->parent(g->obj);
    zc_mutex_unlock(&guards.lock);
}

static void after_fork_in_child(void)
{
    for (zc_fork_guard *g = guards.first; g != NULL; g = g->next)
        g->child(g->obj);
    zc_mutex_unlock(&guards.lock);
}

static void register_handlers(void)
{
    zc_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

void zc_fork_guard_add(zc_fork_guard *g)
{
    zc_once_run(&handlers_once, register_handlers);
    g->registry = &guards;
    zc_mutex_lock(&guards.lock);
    g->prev = NULL;
    g->next = guards.first;
    if (guards.first != NULL)
        guards.first->prev = g;
    guards.first = g;
    zc_mutex_unlock(&guards.lock);
}

void zc_fork_guard_remove(zc_fork_guard *g)
{
    registry *r = (registry *)g->registry;
    if (r == NULL)
        return;
    zc_mutex_lock(&r->lock);
    if (g->prev != NULL)
        g->prev->next = g->next;
    else
        r->first = g->next;
    if (g->next != NULL)
        g->next->prev = g->prev;
    zc_mutex_unlock(&r->lock);
    g->registry = NULL;
}
