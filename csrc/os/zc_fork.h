/* Locks that survive fork().
 *
 * A child made by fork() has one thread, the one that called it. A lock another thread held at
 * that moment stays held in the child for good, so the child's first use of the structure it
 * guards deadlocks, and the structure may be half changed. An object whose locks outlive one
 * call (a chunk cache, a memory store) embeds a zc_fork_guard and adds it once its locks exist:
 * before a fork, every guarded object's locks are taken (its `before`, which takes them in the
 * order its own code nests them), so no thread is inside one when the process is copied; after
 * it, the parent's are given back (`parent`) and the child's are made usable again (`child`,
 * which may also drop what only the vanished threads held).
 *
 * Each extension module links its own copy of csrc/, so each keeps its own registry; a guard
 * remembers the registry it was added to, and is removed from that one, whichever module frees
 * its object. Guards are no-ops where there is no fork (Windows). */
#ifndef ZC_FORK_H
#define ZC_FORK_H

typedef struct zc_fork_guard zc_fork_guard;
struct zc_fork_guard {
    void *obj;
    void (*before)(void *obj);
    void (*parent)(void *obj);
    void (*child)(void *obj);
    /* The registry's links (set by zc_fork_guard_add). */
    zc_fork_guard *prev, *next;
    void *registry;
};

/* Guard `g`'s object from now on (its fields obj, before, parent and child set). */
void zc_fork_guard_add(zc_fork_guard *g);
/* Stop guarding it: before its locks are destroyed, and with none of them held. */
void zc_fork_guard_remove(zc_fork_guard *g);

#endif
