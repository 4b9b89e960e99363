/* SPDX-License-Identifier: MIT */
/*
 * The blocking lane: a pool of unpinned threads beside the workers for work
 * that may block (file I/O, DNS, a slow library call). A worker queues a
 * job and goes on; a lane thread runs it and pushes the finished job onto
 * the caller's completion stack (MPSC, lock-free), then wakes that worker
 * if it sleeps. The caller's mailbox poller takes the stack and runs each
 * job's done callback on the caller's worker.
 *
 * Quiescence: a job counts as sent on the caller when it is queued and as
 * received when the caller takes its completion, so stopping waits for
 * every job in flight. The lane threads are joined at runtime destroy,
 * after they have emptied the queue.
 *
 * Wake-up: the push is a seq_cst CAS followed by pc__wake()'s seq_cst load
 * of the sleeping flag; the worker stores that flag, then its poller's
 * prepare_sleep() loads the stack head (seq_cst). One of the two sees the
 * other, as for the mailboxes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "shard_pvt.h"

struct pc__bjob {
        struct pc__bjob *next;
        void *(*fn)(void *arg);
        void *arg;
        void (*done)(void *result, void *done_arg);
        void *done_arg;
        void *result;
        unsigned worker;
};

struct pc__blocking {
        struct pc__shard *sh;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct pc__bjob *head, *tail; /* under lock, FIFO */
        bool quit;                    /* under lock */
        unsigned nthreads;
        pthread_t threads[];
};

static void complete(struct pc__shard *sh, struct pc__bjob *j)
{
        /* Once pushed, the job belongs to its worker, which may free it at
         * once: read what we need first. */
        unsigned w = j->worker;
        struct pc__mbox_in *in = sh->in[w];
        struct pc__bjob *head = atomic_load_explicit(&in->completions, memory_order_relaxed);

        do {
                j->next = head;
        } while (!atomic_compare_exchange_weak_explicit(&in->completions, &head, j,
                                                        memory_order_seq_cst,
                                                        memory_order_relaxed));
        pc__wake(sh->rt->workers[w]);
}

static void *lane_main(void *arg)
{
        struct pc__blocking *b = arg;

        for (;;) {
                struct pc__bjob *j;

                pthread_mutex_lock(&b->lock);
                while (b->head == NULL && !b->quit)
                        pthread_cond_wait(&b->cond, &b->lock);
                j = b->head;
                if (j == NULL) {
                        pthread_mutex_unlock(&b->lock);
                        break;
                }
                b->head = j->next;
                if (b->head == NULL)
                        b->tail = NULL;
                pthread_mutex_unlock(&b->lock);

                j->result = j->fn(j->arg);
                complete(b->sh, j);
        }
        return NULL;
}

int pc__blocking_start(struct pc__shard *sh, unsigned nthreads)
{
        struct pc__blocking *b;
        int rc = 0;

        if (nthreads == 0)
                return 0;
        b = calloc(1, sizeof(*b) + nthreads * sizeof(pthread_t));
        if (b == NULL)
                return -ENOMEM;
        b->sh = sh;
        pthread_mutex_init(&b->lock, NULL);
        pthread_cond_init(&b->cond, NULL);
        sh->lane = b;
        for (unsigned i = 0; i < nthreads; i++) {
                char name[16];

                rc = -pthread_create(&b->threads[i], NULL, lane_main, b);
                if (rc) {
                        pc_log(PC_LOG_ERROR, "cannot start blocking-lane thread %u: %s", i,
                               pc_strerror(rc));
                        break;
                }
                b->nthreads++;
                snprintf(name, sizeof(name), "pc-blocking-%u", i % 1000u);
                pthread_setname_np(b->threads[i], name);
        }
        if (rc)
                pc__blocking_stop(sh);
        return rc;
}

/* Let the threads empty the queue, then join them. */
void pc__blocking_stop(struct pc__shard *sh)
{
        struct pc__blocking *b = sh->lane;

        if (b == NULL)
                return;
        pthread_mutex_lock(&b->lock);
        b->quit = true;
        pthread_cond_broadcast(&b->cond);
        pthread_mutex_unlock(&b->lock);
        for (unsigned i = 0; i < b->nthreads; i++)
                pthread_join(b->threads[i], NULL);
        /* Only jobs finished after the last run remain: free them. */
        for (unsigned w = 0; w < sh->n; w++) {
                struct pc__bjob *j = atomic_exchange(&sh->in[w]->completions, NULL);
                while (j) {
                        struct pc__bjob *next = j->next;
                        free(j);
                        j = next;
                }
        }
        pthread_cond_destroy(&b->cond);
        pthread_mutex_destroy(&b->lock);
        free(b);
        sh->lane = NULL;
}

/* Run the done callbacks of the calling worker's finished jobs, oldest
 * first. Returns how many. */
unsigned pc__blocking_complete(struct pc__shard_worker *sw)
{
        struct pc__bjob *j, *rev = NULL, *next;
        unsigned n = 0;

        j = atomic_exchange_explicit(&sw->in->completions, NULL, memory_order_acquire);
        while (j) {
                next = j->next;
                j->next = rev;
                rev = j;
                j = next;
                n++;
        }
        pc__count_recv(sw->w, n);
        pc__shard_bump(&sw->c.blocking_done, n);
        for (j = rev; j; j = next) {
                next = j->next;
                if (j->done)
                        j->done(j->result, j->done_arg);
                free(j);
        }
        return n;
}

int pc_spawn_blocking(void *(*fn)(void *arg), void *arg,
                      void (*done)(void *result, void *done_arg), void *done_arg)
{
        struct pc__shard_worker *sw;
        struct pc__blocking *b;
        struct pc__bjob *j;
        int rc;

        sw = pc__shard_self(&rc);
        if (sw == NULL)
                return rc;
        if (fn == NULL)
                return -EINVAL;
        b = sw->sh->lane;
        if (b == NULL)
                return -ENOTSUP;
        j = malloc(sizeof(*j));
        if (j == NULL)
                return -ENOMEM;
        *j = (struct pc__bjob){.fn = fn, .arg = arg, .done = done, .done_arg = done_arg,
                               .worker = sw->id};
        /* This worker also takes the completion, so sent leads recv. */
        pc__count_sent(sw->w, 1);
        pthread_mutex_lock(&b->lock);
        if (b->tail)
                b->tail->next = j;
        else
                b->head = j;
        b->tail = j;
        pthread_cond_signal(&b->cond);
        pthread_mutex_unlock(&b->lock);
        return 0;
}
