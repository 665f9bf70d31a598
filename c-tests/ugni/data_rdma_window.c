/* Many RDMA transfers in flight at once, as bandwidth-bound programs post them: every
 * rank posts a window of RDMA PUTs (distinct offsets of its right neighbour's window)
 * and RDMA GETs (from its left neighbour) without reaping, then reaps every event and
 * checks that each descriptor comes back exactly once with its own event data, and
 * that every byte arrived.  Across machines these travel in the background (libfabric
 * RMA pieces in flight together); GNI_EpUnbind answers NOT_DONE while any is in flight
 * and SUCCESS once all are reaped.  Usage: data_rdma_window [window] [KiB per post] [puts]
 * ("puts": the PUTs alone, so that nothing waits for a GET's reply between them and the
 * whole window is in flight at once). */
#include "data_util.h"

static uint8_t pat(int r, size_t i) { return (uint8_t)(r * 59 + i * 13 + (i >> 12)); }

int main(int argc, char **argv)
{
    int w = argc > 1 ? atoi(argv[1]) : 24;
    int gets = !(argc > 3 && !strcmp(argv[3], "puts"));
    size_t per = (size_t)(argc > 2 ? atoi(argv[2]) : 192) << 10;
    gnit_t t;
    gnit_init(&t, 4 * (uint32_t)w + 16);
    int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
    size_t len = per * (size_t)w;
    uint8_t *src = dt_alloc(len), *win = dt_alloc(len), *got = dt_alloc(len);
    for (size_t i = 0; i < len; i++) {
        src[i] = pat(t.rank, i);
        win[i] = pat(t.rank + 100, i);      /* what our left neighbour GETs */
    }
    gni_mem_handle_t smh = dt_reg(&t, src, len, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t gmh = dt_reg(&t, got, len, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t wmh = dt_reg(&t, win, len, NULL, GNI_MEM_READWRITE);
    uint8_t *land = dt_alloc(len);                  /* where our left neighbour PUTs */
    gni_mem_handle_t lmh = dt_reg(&t, land, len, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t wh[64], lh[64];
    uint64_t wb[64], lb[64];
    CHECK(t.size <= 64);
    gnit_exchange_mem(&t, win, wmh, wh, wb);
    gnit_exchange_mem(&t, land, lmh, lh, lb);
    dt_barrier();

    gni_post_descriptor_t *d = calloc(2 * (size_t)w, sizeof(*d));
    CHECK(d);
    for (int i = 0; i < w; i++) {
        dt_desc(&d[i], GNI_POST_RDMA_PUT, GNI_CQMODE_GLOBAL_EVENT, src + (size_t)i * per, smh, lb[right] + (size_t)i * per, lh[right], per);
        dt_desc(&d[w + i], GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, got + (size_t)i * per, gmh, wb[left] + (size_t)i * per, wh[left], per);
    }
    for (int i = 0; i < w; i++) {
        GNI_OK(GNI_PostRdma(t.eps[right], &d[i]));
        if (gets) GNI_OK(GNI_PostRdma(t.eps[left], &d[w + i]));
    }
    gni_return_t unbind = GNI_EpUnbind(t.eps[right]);
    CHECK(unbind == GNI_RC_NOT_DONE || unbind == GNI_RC_SUCCESS);
    if (unbind == GNI_RC_SUCCESS) GNI_OK(GNI_EpBind(t.eps[right], t.addrs[right], GNIT_RID(t.rank, right)));
    int *seen = calloc(2 * (size_t)w, sizeof(int));
    CHECK(seen);
    for (int n = 0; n < (gets ? 2 : 1) * w; n++) {
        gni_cq_entry_t ev = gnit_wait(t.cq, GNI_RC_SUCCESS);
        gni_post_descriptor_t *p = NULL;
        GNI_OK(GNI_GetCompleted(t.cq, ev, &p));
        CHECK(p >= d && p < d + 2 * w);
        int k = (int)(p - d);
        CHECK_EQ(seen[k], 0);
        seen[k] = 1;
        /* GLOBAL events carry the EP's local event data: the bound remote_id. */
        CHECK_EQ(GNI_CQ_GET_INST_ID(ev), GNIT_RID(t.rank, k < w ? right : left));
    }
    GNI_OK(GNI_EpUnbind(t.eps[right]));
    GNI_OK(GNI_EpBind(t.eps[right], t.addrs[right], GNIT_RID(t.rank, right)));
    for (size_t i = 0; gets && i < len; i++)
        if (got[i] != pat(left + 100, i)) SN_FAIL("GET byte %zu from rank %d: %u, expected %u", i, left, got[i], pat(left + 100, i));
    dt_barrier();
    for (size_t i = 0; i < len; i++)
        if (land[i] != pat(left, i)) SN_FAIL("PUT byte %zu from rank %d: %u, expected %u", i, left, land[i], pat(left, i));
    dt_barrier();
    printf("data_rdma_window: rank %d ok (%d PUTs and %d GETs of %zu KiB in flight, unbind %s)\n", t.rank, w, gets ? w : 0, per >> 10,
           unbind == GNI_RC_NOT_DONE ? "NOT_DONE" : "SUCCESS");
    gnit_fini(&t);
    return 0;
}
