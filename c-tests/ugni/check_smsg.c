/* The checker (SOFTNIC_CHECK) against a received short message used after its release, a
 * bug the hardware keeps silent (the slot then holds a later message, or is being
 * written).  Two ranks send each other MSGS messages over SMSG; each message is read
 * through the pointer GNI_SmsgGetNext returned:
 *   after   the third message is read again after GNI_SmsgRelease
 *   write   the third message is written after GNI_SmsgRelease (a program reusing it as
 *           scratch)
 *   clean   every message read (and written: it is the program's until the release)
 *           before its release: no finding, over more messages than the checker keeps
 *           taken-back copies of
 * The checker reports each use once and lets the program go on.
 * Prints "check_smsg: rank R MODE done VALUE". */
#include "data_util.h"

#define CRED 4
#define MAXSZ 64
#define MSGS 600

static gnit_t t;

struct msg { uint32_t seq, from; uint64_t payload[4]; };

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    gnit_init(&t, 256);
    if (t.size != 2) SKIP("needs 2 ranks");
    int peer = 1 - t.rank;
    gni_smsg_attr_t a;
    unsigned int mbsz = dt_smsg_attr(&a, CRED, MAXSZ);
    char *mb = dt_alloc(mbsz);
    gni_mem_handle_t mbh = dt_reg(&t, mb, mbsz, NULL, GNI_MEM_READWRITE);
    gni_mem_handle_t mh[2];
    uint64_t base[2];
    gnit_exchange_mem(&t, mb, mbh, mh, base);
    gni_smsg_attr_t l = a, r = a;
    l.msg_buffer = mb; l.buff_size = mbsz; l.mem_hndl = mbh; l.mbox_offset = 0;
    r.msg_buffer = (void *)(uintptr_t)base[peer]; r.buff_size = mbsz; r.mem_hndl = mh[peer]; r.mbox_offset = 0;
    GNI_OK(GNI_SmsgInit(t.eps[peer], &l, &r));
    dt_barrier();

    int msgs = !strcmp(mode, "clean") ? MSGS : 8;
    uint64_t sum = 0;
    int sent = 0, got = 0;
    struct msg m;
    while (sent < msgs || got < msgs) {
        if (sent < msgs) {
            m.seq = (uint32_t)sent; m.from = (uint32_t)t.rank;
            for (int i = 0; i < 4; i++) m.payload[i] = (uint64_t)sent * 10 + (uint64_t)i;
            gni_return_t rc = GNI_SmsgSend(t.eps[peer], &m, sizeof(m), NULL, 0, (uint32_t)sent);
            if (rc == GNI_RC_SUCCESS) {
                sent++;
                gnit_wait(t.cq, GNI_RC_SUCCESS); /* the local SMSG event */
            } else CHECK_EQ(rc, GNI_RC_NOT_DONE);
        }
        void *hp;
        gni_return_t rc = GNI_SmsgGetNext(t.eps[peer], &hp);
        if (rc == GNI_RC_NOT_DONE) continue;
        GNI_OK(rc);
        struct msg *in = hp;
        CHECK_EQ(in->seq, (uint32_t)got);
        CHECK_EQ(in->from, (uint32_t)peer);
        sum += in->payload[3];
        in->payload[0] = 0; /* the program's until the release */
        GNI_OK(GNI_SmsgRelease(t.eps[peer]));
        if (got == 2 && !strcmp(mode, "after")) sum += in->payload[1]; /* the bug */
        if (got == 2 && !strcmp(mode, "write")) in->payload[2] = 1;    /* the bug */
        got++;
    }
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &mbh));
    printf("check_smsg: rank %d %s done %llu\n", t.rank, mode, (unsigned long long)sum);
    gnit_fini(&t);
    return 0;
}
