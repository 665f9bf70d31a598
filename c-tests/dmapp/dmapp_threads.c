/* DMAPP from several threads at once (dmapp.h: the library is thread-safe whatever
 * max_concurrency says; this test asks for NT).  Each of NT threads per PE works on the
 * right neighbour's symmetric heap: blocking PUT of a private pattern into its own slot
 * and GET back, non-blocking PUT/GET with syncids, and fetch-adds on one shared counter
 * (checked exactly at the end), all at the same time. */
#include <pthread.h>
#include "dmtest.h"

#define NT 4
#define ITERS 1500
#define SLOT 256                          /* bytes per thread slot */

static int right;
static uint8_t *heap;                     /* [0]: counter, slots from 64 */

static void *worker(void *arg)
{
    long id = (long)arg;
    uint8_t src[SLOT], back[SLOT];
    uint8_t *slot = heap + 64 + id * SLOT;
    for (int i = 0; i < ITERS; i++) {
        for (int k = 0; k < SLOT; k++) src[k] = (uint8_t)(id * 29 + i * 7 + k);
        if (i % 2 == 0) {
            OK(dmapp_put(slot, sheap(), right, src, SLOT / 8, DMAPP_QW));
            OK(dmapp_get(back, slot, sheap(), right, SLOT / 8, DMAPP_QW));
        } else {
            dmapp_syncid_handle_t h1, h2;
            OK(dmapp_put_nb(slot, sheap(), right, src, SLOT / 8, DMAPP_QW, &h1));
            OK(dmapp_syncid_wait(&h1));
            OK(dmapp_get_nb(back, slot, sheap(), right, SLOT / 8, DMAPP_QW, &h2));
            OK(dmapp_syncid_wait(&h2));
        }
        if (memcmp(src, back, SLOT) != 0) SN_FAIL("thread %ld iteration %d: GET differs from PUT", id, i);
        int64_t old;
        OK(dmapp_afadd_qw(&old, heap, sheap(), right, 1));
        CHECK(old >= 0 && old < (int64_t)NT * ITERS);
    }
    return NULL;
}

int main(void)
{
    dmapp_rma_attrs_t req = {0}, act = {0};
    req.max_outstanding_nb = DMAPP_DEF_OUTSTANDING_NB;
    req.offload_threshold = DMAPP_OFFLOAD_THRESHOLD;
    req.put_relaxed_ordering = DMAPP_ROUTING_DETERMINISTIC;
    req.get_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE;
    req.max_concurrency = NT;
    OK(dmapp_init(&req, &act));
    CHECK_EQ(act.max_concurrency, NT);
    OK(dmapp_get_jobinfo(&job));
    me = job.pe;
    npes = job.npes;
    sntest_rank = me;
    right = (me + 1) % npes;
    heap = dmapp_sheap_malloc(64 + NT * SLOT);
    CHECK(heap != NULL);
    memset(heap, 0, 64 + NT * SLOT);
    barrier();
    pthread_t th[NT];
    for (long i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, worker, (void *)i) == 0);
    for (int i = 0; i < NT; i++) CHECK(pthread_join(th[i], NULL) == 0);
    barrier();
    CHECK_EQ(*(volatile int64_t *)heap, (long)NT * ITERS);
    dmapp_sheap_free(heap);
    OK(dmapp_finalize());
    printf("dmapp_threads: pe %d of %d ok (%d threads x %d put/get/afadd)\n", me, npes, NT, ITERS);
    return 0;
}
