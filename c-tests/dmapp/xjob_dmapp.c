/* Two concurrent DMAPP jobs on one machine (c-tests/tools/twojobs; any launcher or none).
 * Job A's PE r registers a malloc'd canary buffer (dmapp_mem_register) and fills a block
 * of its symmetric heap with canaries, and writes both segment descriptors (the whole
 * dmapp_seg_desc_t bytes), the block's address and its PE number to a file.  Job B's PE r
 * reads them and, with A's descriptors and addresses, tries every PE of its own job (its
 * PE numbers name B's processes, never A's): blocking put, put_nbi + gsync_wait, blocking
 * get, get_nbi + gsync_wait and a fetching AMO (afadd_qw).
 * Every access is DMAPP_RC_TRANSACTION_ERROR (from the blocking call, or from gsync_wait
 * for the _nbi ones) and the get's and AMO's local buffers are untouched:
 * - the registered buffer's descriptor names A's process, which is no PE of job B;
 * - A's heap descriptor is not B's own (dmapp_segdesc_compare: a memory handle names the
 *   process that registered it, here A's), so it names nothing at B's PEs either: B's
 *   own heap blocks (filled with other bytes) stay as they were.
 * After B is done, every byte of both of A's regions is still the canary.
 *
 * "mixed" is the control that shows the checks catch a reach: one job whose first half
 * of the PEs are owners and second half intruders (PE h+r learns PE r's record), so the
 * intruders' PE numbers do name the owners: an intruder fails at its first access that
 * succeeds (a put into an owner's buffer), which ends the job; its manifest line expects
 * exit 1 and that failure. */
#include "dmtest.h"
#include "xjob.h"

#define LEN 4096
#define MINE 0x3c   /* B's heap block */
#define UNSET 0x5a  /* B's local buffers */

struct rec { dmapp_seg_desc_t reg, heap; uint64_t heap_block; int32_t pe, npes; };

static void untouched(const void *buf, size_t len, int byte, const char *what)
{
    const unsigned char *b = buf;
    for (size_t i = 0; i < len; i++)
        if (b[i] != byte) SN_FAIL("%s changed at byte %zu (0x%02x)", what, i, b[i]);
}

/* Every access through A's descriptor `d` to `remote` at PE `pe` of our job fails and
 * moves nothing. */
static void attempt(const dmapp_seg_desc_t *desc, uint64_t remote_addr, int pe, int64_t *local)
{
    dmapp_seg_desc_t d = *desc;
    void *remote = (void *)(uintptr_t)remote_addr;
    int64_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, old = 77;
    RC_EQ(dmapp_put(remote, &d, pe, v, 8, DMAPP_QW), DMAPP_RC_TRANSACTION_ERROR);
    OK(dmapp_put_nbi(remote, &d, pe, v, 8, DMAPP_QW));
    RC_EQ(dmapp_gsync_wait(), DMAPP_RC_TRANSACTION_ERROR);
    RC_EQ(dmapp_get(local, remote, &d, pe, LEN / 8, DMAPP_QW), DMAPP_RC_TRANSACTION_ERROR);
    OK(dmapp_get_nbi(local, remote, &d, pe, LEN / 8, DMAPP_QW));
    RC_EQ(dmapp_gsync_wait(), DMAPP_RC_TRANSACTION_ERROR);
    RC_EQ(dmapp_afadd_qw(&old, remote, &d, pe, 1), DMAPP_RC_TRANSACTION_ERROR);
    CHECK_EQ(old, 77);
    untouched(local, LEN, UNSET, "our get buffer (failed gets)");
}

int main(int argc, char **argv)
{
    if (argc < 2) SN_FAIL("usage: xjob_dmapp owner|intruder|mixed");
    dm_init();
    int mixed = !strcmp(argv[1], "mixed"), half = npes / 2;
    if (mixed && npes % 2) SN_FAIL("mixed needs an even number of PEs");
    int owner = mixed ? me < half : !strcmp(argv[1], "owner");
    int slot = mixed ? me % half : me;   /* whose record: a.<slot> */
    uint8_t *block = dmapp_sheap_malloc(LEN);   /* same offset on every PE of both jobs */
    CHECK(block != NULL);
    if (owner) {
        uint8_t *buf = malloc(LEN);
        CHECK(buf != NULL);
        memset(buf, XJOB_CANARY, LEN);
        memset(block, XJOB_CANARY, LEN);
        struct rec r;
        memset(&r, 0, sizeof r);
        OK(dmapp_mem_register(buf, LEN, &r.reg));
        r.heap = *sheap();
        r.heap_block = (uint64_t)(uintptr_t)block;
        r.pe = me;
        r.npes = npes;
        xjob_publish(slot, &r, sizeof r);
        xjob_wait_done(slot);
        if (!xjob_intact(buf, LEN)) SN_FAIL("another job changed our registered buffer");
        if (!xjob_intact(block, LEN)) SN_FAIL("another job changed our symmetric heap");
        OK(dmapp_mem_unregister(&r.reg));
        free(buf);
    } else {
        memset(block, MINE, LEN);
        int64_t *local = malloc(LEN);
        CHECK(local != NULL);
        memset(local, UNSET, LEN);
        struct rec r;
        xjob_learn(slot, &r, sizeof r);
        CHECK_EQ(r.pe, slot);
        if (!mixed) barrier();   /* every PE's heap block is filled before anyone reads it */
        for (int pe = 0; pe < npes; pe++)
            attempt(&r.reg, (uint64_t)(uintptr_t)r.reg.addr, pe, local);
        /* A's heap descriptor is not ours (its handle names A's process), and it reaches
         * neither A's heap nor the heaps of our own PEs. */
        int same = -1;
        OK(dmapp_segdesc_compare(&r.heap, sheap(), &same));
        CHECK_EQ(same, 0);
        for (int pe = 0; pe < npes; pe++)
            attempt(&r.heap, r.heap_block, pe, local);
        if (!mixed) barrier();   /* nobody reads our block any more */
        untouched(block, LEN, MINE, "our heap block");
        free(local);
        xjob_done(slot);
    }
    OK(dmapp_finalize());
    printf("xjob_dmapp: %s rank %d ok\n", owner ? "owner" : "intruder", me);
    return 0;
}
