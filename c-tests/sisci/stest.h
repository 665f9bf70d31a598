/* Helpers of the SISCI tests: checked calls, PMI bootstrap, connect-with-retry. */
#ifndef STEST_H
#define STEST_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include "sisci_api.h"
#include "pmi.h"
#include "sntest.h"

static sci_error_t err;

/* Runs a SISCI call that takes &err and checks it returned SCI_ERR_OK. */
#define OK(...) do { err = (sci_error_t)0x12345; __VA_ARGS__; \
    if (err != SCI_ERR_OK) SN_FAIL("%s -> %s (0x%x)", #__VA_ARGS__, SCIGetErrorString(err), (unsigned)err); } while (0)
/* ... and checks it failed with `code` (and that *error was written). */
#define FAILS(code, ...) do { err = (sci_error_t)0x12345; __VA_ARGS__; \
    if (err != (sci_error_t)(code)) SN_FAIL("%s -> %s (0x%x), expected %s", #__VA_ARGS__, \
        SCIGetErrorString(err), (unsigned)err, #code); } while (0)

__attribute__((unused)) static double st_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Rank and size from the launcher (PMI), and every rank's SISCI node id. */
__attribute__((unused)) static void st_job(int *rank, int *size, unsigned int **nodes)
{
    int spawned;
    CHECK(PMI_Init(&spawned) == PMI_SUCCESS);
    CHECK(PMI_Get_rank(rank) == PMI_SUCCESS);
    CHECK(PMI_Get_size(size) == PMI_SUCCESS);
    sntest_rank = *rank;
    unsigned int me;
    OK(SCIGetLocalNodeId(0, &me, 0, &err));
    *nodes = calloc((size_t)*size, sizeof(unsigned int));
    CHECK(PMI_Allgather(&me, *nodes, sizeof me) == PMI_SUCCESS);
}

/* Connects to segment `id` of node `node`, retrying while it does not exist yet (the way
 * SISCI programs wait for their peer).  Gives up after `secs` seconds. */
__attribute__((unused)) static sci_remote_segment_t st_connect(sci_desc_t sd, unsigned int node, unsigned int id,
                                                               sci_cb_remote_segment_t cb, void *arg, unsigned int flags, double secs)
{
    sci_remote_segment_t rs;
    double end = st_now() + secs;
    int tries = 0;
    for (;;) {
        SCIConnectSegment(sd, &rs, node, id, 0, cb, arg, SCI_INFINITE_TIMEOUT, flags, &err);
        if (err == SCI_ERR_OK)
            return rs;
        if (err != SCI_ERR_NO_SUCH_SEGMENT)
            SN_FAIL("SCIConnectSegment(node %u, segment %u) -> %s", node, id, SCIGetErrorString(err));
        if (st_now() > end)
            SN_FAIL("segment %u of node %u did not appear within %.0f s (%d tries)", id, node, secs, tries);
        tries++;
        usleep(1000);
    }
}

__attribute__((unused)) static sci_remote_interrupt_t st_connect_int(sci_desc_t sd, unsigned int node, unsigned int no, unsigned int flags, double secs)
{
    sci_remote_interrupt_t ri;
    double end = st_now() + secs;
    for (;;) {
        SCIConnectInterrupt(sd, &ri, node, 0, no, SCI_INFINITE_TIMEOUT, flags, &err);
        if (err == SCI_ERR_OK)
            return ri;
        if (err != SCI_ERR_NO_SUCH_INTNO)
            SN_FAIL("SCIConnectInterrupt(node %u, %u) -> %s", node, no, SCIGetErrorString(err));
        if (st_now() > end)
            SN_FAIL("interrupt %u of node %u did not appear within %.0f s", no, node, secs);
        usleep(1000);
    }
}

__attribute__((unused)) static sci_remote_data_interrupt_t st_connect_dint(sci_desc_t sd, unsigned int node, unsigned int no, unsigned int flags, double secs)
{
    sci_remote_data_interrupt_t ri;
    double end = st_now() + secs;
    for (;;) {
        SCIConnectDataInterrupt(sd, &ri, node, 0, no, SCI_INFINITE_TIMEOUT, flags, &err);
        if (err == SCI_ERR_OK)
            return ri;
        if (err != SCI_ERR_NO_SUCH_INTNO)
            SN_FAIL("SCIConnectDataInterrupt(node %u, %u) -> %s", node, no, SCIGetErrorString(err));
        if (st_now() > end)
            SN_FAIL("data interrupt %u of node %u did not appear within %.0f s", no, node, secs);
        usleep(1000);
    }
}

/* A sequence whose map was unmapped stays (programs do not remove theirs), holding
 * nothing: its calls fail with SCI_ERR_ILLEGAL_OPERATION, barriers on it do nothing. */
__attribute__((unused)) static void st_orphan_sequence(sci_sequence_t seq)
{
    CHECK_EQ(SCICheckSequence(seq, 0, &err), SCI_SEQ_NOT_RETRIABLE);
    CHECK_EQ(err, SCI_ERR_ILLEGAL_OPERATION);
    CHECK_EQ(SCIStartSequence(seq, 0, &err), SCI_SEQ_PENDING);
    CHECK_EQ(err, SCI_ERR_ILLEGAL_OPERATION);
    SCIStoreBarrier(seq, 0);
    SCIFlush(seq, 0);
}

/* Programs that take their peers' node ids on the command line: under a launcher over
 * several machines the processes meet at a collective first (a program of one machine
 * needs none), and at the end.  Returns whether a launcher started us. */
__attribute__((unused)) static int st_meet(void)
{
    int spawned, launched = getenv("PMI_RANK") && PMI_Init(&spawned) == PMI_SUCCESS;
    if (launched) PMI_Barrier();
    return launched;
}

__attribute__((unused)) static void st_part(int launched)
{
    if (launched) {
        PMI_Barrier();
        PMI_Finalize();
    }
}

/* Spins (politely) until *p == v. */
__attribute__((unused)) static void st_await(volatile uint64_t *p, uint64_t v, double secs)
{
    double end = st_now() + secs;
    unsigned n = 0;
    while (*p != v) {
        if ((++n & 1023) == 0) {
            if (st_now() > end)
                SN_FAIL("waited %.0f s for %llu at %p, holds %llu", secs, (unsigned long long)v, (void *)p, (unsigned long long)*p);
            sched_yield();
        }
    }
}
/* A segment of this rank (id, size bytes) mapped, prepared and available, a DMA queue, and
 * the same segment connected as a remote one: DMA between two places of one's own memory. */
typedef struct {
    sci_desc_t sd;
    sci_local_segment_t ls;
    sci_map_t lmap;
    sci_dma_queue_t dq;
    sci_remote_segment_t rs;
    volatile uint8_t *mem;
} st_loop_t;

__attribute__((unused)) static void st_loop_open(st_loop_t *l, unsigned int node, unsigned int id, size_t size, void (*fill)(volatile uint8_t *))
{
    OK(SCIOpen(&l->sd, 0, &err));
    OK(SCICreateSegment(l->sd, &l->ls, id, size, NULL, NULL, 0, &err));
    l->mem = SCIMapLocalSegment(l->ls, &l->lmap, 0, size, NULL, 0, &err);
    CHECK(err == SCI_ERR_OK);
    memset((void *)l->mem, 0, size);
    if (fill) fill(l->mem);
    OK(SCIPrepareSegment(l->ls, 0, 0, &err));
    OK(SCISetSegmentAvailable(l->ls, 0, 0, &err));
    OK(SCICreateDMAQueue(l->sd, &l->dq, 0, 16, 0, &err));
    l->rs = st_connect(l->sd, node, id, NULL, NULL, 0, 30);
}

__attribute__((unused)) static void st_loop_close(st_loop_t *l)
{
    OK(SCIDisconnectSegment(l->rs, 0, &err));
    OK(SCIRemoveDMAQueue(l->dq, 0, &err));
    OK(SCISetSegmentUnavailable(l->ls, 0, 0, &err));
    OK(SCIUnmapSegment(l->lmap, 0, &err));
    OK(SCIRemoveSegment(l->ls, 0, &err));
    OK(SCIClose(l->sd, 0, &err));
    SCITerminate();
}

#endif
