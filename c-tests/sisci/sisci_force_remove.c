/* An owner removing a segment while importers map it and run DMA transfers into it.
 * Rank 0 owns the segments; every other rank imports them, with one thread starting
 * transfers (SCIStartDmaTransfer from a local segment, no flags: the quick path) in a
 * loop while another maps and unmaps a second window of the segment.
 *
 *   held    the importers keep a map all along: every SCIRemoveSegment of the owner
 *           (no flags) is SCI_ERR_BUSY, every transfer ends DONE, the data lands.
 *   unmap   the importers' maps come and go (the map thread), and at the end the
 *           persistent map goes too while transfers run: the owner retries its
 *           SCIRemoveSegment until it succeeds (or, after 10 s, forces it).  Each
 *           transfer ends DONE or ERROR; once one ended in ERROR no later one is DONE.
 *   withdraw  the importers map and transfer; the owner withdraws the segment with
 *           SCISetSegmentUnavailable(SCI_FLAG_FORCE_DISCONNECT) meanwhile: the
 *           connections are dropped, so transfers end in ERROR (within 10 s, never DONE
 *           again after the first ERROR) although the segment and its memory remain;
 *           the importer unmaps and disconnects without error, the owner then removes
 *           the segment (no flags: nothing holds it any more).
 *   force   the importers map and transfer; the owner removes the segment with
 *           SCI_FLAG_FORCE_REMOVE meanwhile: OK at once.  Every transfer ends DONE or
 *           ERROR, ERROR within 10 s, never DONE again after the first ERROR; the
 *           importer then unmaps and disconnects without error.
 *
 * Prints "sisci_force_remove: rank N ok".  Usage: sisci_force_remove [seconds] */
#include "stest.h"
#include <pthread.h>

#define BASE 7300
#define SEGSIZE (1 << 20)
#define XFER 16384

static int rank, size;
static unsigned int *nodes;
static sci_desc_t sd;
static double secs = 0.3;

struct imp {
    sci_remote_segment_t rs;
    sci_local_segment_t src;
    sci_dma_queue_t dq;
    size_t roff;
    volatile int stop;
    volatile long done, errors, done_after_error;
    int map_fails_ok;
};

static void *transfers(void *p)
{
    struct imp *x = p;
    sci_error_t e;
    while (!x->stop) {
        e = (sci_error_t)0x12345;
        SCIStartDmaTransfer(x->dq, x->src, x->rs, 0, XFER, x->roff, NULL, NULL, 0, &e);
        if (e != SCI_ERR_OK)
            SN_FAIL("SCIStartDmaTransfer -> %s", SCIGetErrorString(e));
        sci_dma_queue_state_t st = SCIWaitForDMAQueue(x->dq, SCI_INFINITE_TIMEOUT, 0, &e);
        if (e != SCI_ERR_OK)
            SN_FAIL("SCIWaitForDMAQueue -> %s", SCIGetErrorString(e));
        if (st == SCI_DMAQUEUE_DONE) {
            x->done++;
            if (x->errors)
                x->done_after_error++;
        } else if (st == SCI_DMAQUEUE_ERROR) {
            x->errors++;
        } else {
            SN_FAIL("transfer ended in state %d", (int)st);
        }
    }
    return NULL;
}

/* Maps and unmaps a window of the segment until stopped; once the segment is gone a map
 * fails (SCI_ERR_NOT_CONNECTED, or SCI_ERR_NO_SUCH_SEGMENT) and the thread just retries. */
static void *mapper(void *p)
{
    struct imp *x = p;
    sci_error_t e;
    while (!x->stop) {
        sci_map_t m;
        e = (sci_error_t)0x12345;
        volatile uint8_t *w = SCIMapRemoteSegment(x->rs, &m, 4096, 4096, NULL, 0, &e);
        if (e != SCI_ERR_OK) {
            if (!x->map_fails_ok)
                SN_FAIL("SCIMapRemoteSegment -> %s", SCIGetErrorString(e));
            continue;
        }
        (void)w;
        e = (sci_error_t)0x12345;
        SCIUnmapSegment(m, 0, &e);
        if (e != SCI_ERR_OK)
            SN_FAIL("SCIUnmapSegment -> %s", SCIGetErrorString(e));
    }
    return NULL;
}

static sci_local_segment_t make_seg(unsigned int id)
{
    sci_local_segment_t ls;
    OK(SCICreateSegment(sd, &ls, id, SEGSIZE, NULL, NULL, 0, &err));
    OK(SCIPrepareSegment(ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(ls, 0, 0, &err));
    return ls;
}

static void pattern(uint8_t *p, int phase, int r)
{
    for (size_t k = 0; k < XFER; k++)
        p[k] = (uint8_t)(k * 13 + phase * 7 + r * 31 + 1);
}

enum { HELD, UNMAP, WITHDRAW, FORCE };

/* One phase at an importer. */
static void importer(int phase, sci_local_segment_t src, uint8_t *srcmem, sci_dma_queue_t dq)
{
    struct imp x = { .src = src, .dq = dq, .roff = (size_t)rank * XFER, .map_fails_ok = phase != HELD };
    pattern(srcmem, phase, rank);
    x.rs = st_connect(sd, nodes[0], BASE + phase, NULL, NULL, 0, 30);
    sci_map_t m;
    OK(SCIMapRemoteSegment(x.rs, &m, 0, SEGSIZE, NULL, 0, &err));
    PMI_Barrier(); /* the owner starts removing after this */
    pthread_t tt, tm;
    CHECK(pthread_create(&tt, NULL, transfers, &x) == 0);
    CHECK(pthread_create(&tm, NULL, mapper, &x) == 0);
    double t0 = st_now();
    if (phase == HELD) {
        while (st_now() < t0 + secs) usleep(1000);
    } else {
        if (phase == UNMAP) {
            while (st_now() < t0 + secs) usleep(1000);
            OK(SCIUnmapSegment(m, 0, &err));
        }
        /* The removal (or the forced one) ends the transfers in ERROR. */
        while (x.errors == 0 && st_now() < t0 + 10) usleep(1000);
        if (x.errors == 0)
            SN_FAIL("phase %d: no transfer failed within 10 s", phase);
        long seen = x.done;
        usleep(20000);
        if (x.done != seen)
            SN_FAIL("phase %d: %ld transfers DONE after the segment was removed", phase, x.done - seen);
    }
    PMI_Barrier(); /* the owner's removals are over (the map stays till then) */
    x.stop = 1;
    pthread_join(tt, NULL);
    pthread_join(tm, NULL);
    printf("sisci_force_remove: rank %d phase %d: %ld transfers done, %ld failed\n", rank, phase, (long)x.done, (long)x.errors);
    if (x.done_after_error)
        SN_FAIL("phase %d: %ld transfers DONE after one ended in ERROR", phase, x.done_after_error);
    if (phase == HELD) {
        CHECK(x.errors == 0 && x.done > 0);
        OK(SCIUnmapSegment(m, 0, &err));
    } else if (phase == FORCE || phase == WITHDRAW) {
        /* The map of a forcibly removed (or withdrawn) segment still goes, and so does the
         * connection. */
        OK(SCIUnmapSegment(m, 0, &err));
    }
    OK(SCIDisconnectSegment(x.rs, 0, &err));
    PMI_Barrier(); /* phase over */
}

/* One phase at the owner. */
static void owner(int phase)
{
    sci_local_segment_t ls = make_seg(BASE + phase);
    sci_map_t lm;
    volatile uint8_t *mem = SCIMapLocalSegment(ls, &lm, 0, SEGSIZE, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK);
    memset((void *)mem, 0, SEGSIZE);
    /* The owner's own map would hold the segment too. */
    OK(SCIUnmapSegment(lm, 0, &err));
    PMI_Barrier(); /* importers mapped */
    double t0 = st_now();
    if (phase == HELD) {
        long busy = 0;
        while (st_now() < t0 + secs) {
            err = (sci_error_t)0x12345;
            SCIRemoveSegment(ls, 0, &err);
            if (err != SCI_ERR_BUSY)
                SN_FAIL("SCIRemoveSegment while mapped (attempt %ld, %.3f s) -> %s, expected SCI_ERR_BUSY", busy + 1, st_now() - t0, SCIGetErrorString(err));
            busy++;
            usleep(200);
        }
        CHECK(busy > 0);
    } else if (phase == UNMAP) {
        for (;;) {
            err = (sci_error_t)0x12345;
            SCIRemoveSegment(ls, 0, &err);
            if (err == SCI_ERR_OK)
                break;
            if (err != SCI_ERR_BUSY)
                SN_FAIL("SCIRemoveSegment -> %s", SCIGetErrorString(err));
            if (st_now() > t0 + secs + 10) {
                printf("sisci_force_remove: removal still refused after 10 s: forced\n");
                OK(SCIRemoveSegment(ls, SCI_FLAG_FORCE_REMOVE, &err));
                break;
            }
        }
    } else if (phase == WITHDRAW) {
        usleep((useconds_t)(secs * 1e6 / 3));
        OK(SCISetSegmentUnavailable(ls, 0, SCI_FLAG_FORCE_DISCONNECT, &err));
    } else {
        usleep((useconds_t)(secs * 1e6 / 3));
        OK(SCIRemoveSegment(ls, SCI_FLAG_FORCE_REMOVE, &err));
    }
    PMI_Barrier(); /* removals over */
    PMI_Barrier(); /* phase over */
    if (phase == HELD) {
        /* Every importer's last transfer landed in its own slice. */
        mem = SCIMapLocalSegment(ls, &lm, 0, SEGSIZE, NULL, 0, &err);
        CHECK(err == SCI_ERR_OK);
        uint8_t want[XFER];
        for (int r = 1; r < size; r++) {
            pattern(want, phase, r);
            if (memcmp((const void *)(mem + (size_t)r * XFER), want, XFER) != 0)
                SN_FAIL("the data of rank %d did not land", r);
        }
        OK(SCIUnmapSegment(lm, 0, &err));
        OK(SCIRemoveSegment(ls, 0, &err));
    } else if (phase == WITHDRAW) {
        OK(SCIRemoveSegment(ls, 0, &err));
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)
        secs = atof(argv[1]);
    OK(SCIInitialize(0, &err));
    st_job(&rank, &size, &nodes);
    CHECK(size >= 2);
    OK(SCIOpen(&sd, 0, &err));
    sci_local_segment_t src = 0;
    sci_map_t sm;
    uint8_t *srcmem = NULL;
    sci_dma_queue_t dq = 0;
    if (rank > 0) {
        OK(SCICreateSegment(sd, &src, BASE + 100 + rank, XFER, NULL, NULL, 0, &err));
        srcmem = (uint8_t *)SCIMapLocalSegment(src, &sm, 0, XFER, NULL, 0, &err);
        CHECK(err == SCI_ERR_OK);
        OK(SCIPrepareSegment(src, 0, 0, &err));
        OK(SCICreateDMAQueue(sd, &dq, 0, 1, 0, &err));
    }
    for (int phase = HELD; phase <= FORCE; phase++) {
        if (rank == 0)
            owner(phase);
        else
            importer(phase, src, srcmem, dq);
    }
    if (rank > 0) {
        OK(SCIRemoveDMAQueue(dq, 0, &err));
        OK(SCIUnmapSegment(sm, 0, &err));
        OK(SCIRemoveSegment(src, 0, &err));
    }
    OK(SCIClose(sd, 0, &err));
    SCITerminate();
    printf("sisci_force_remove: rank %d ok\n", rank);
    fflush(stdout);
    PMI_Finalize();
    return 0;
}
