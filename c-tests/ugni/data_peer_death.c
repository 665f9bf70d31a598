/* A peer that dies gives its partners errors, not hangs.  The rank starts a helper
 * process (this program again, as a PMI singleton with the job's ptag and cookie) that
 * attaches as instance 4242 + rank and registers a window and an SMSG mailbox; the rank reaches
 * it with FMA PUT, AMO, RDMA GET and SMSG (all succeed), tells it to exit, reaps it, and
 * then every one of those operations still returns from the post at once and completes
 * with a transaction error event (GNI_CqWaitEvent answers TRANSACTION_ERROR) within a
 * second; GetCompleted returns the descriptor with a non-zero status. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "data_util.h"

#define CHILD_INST 4242
#define WIN 4096

static gni_smsg_attr_t smsg_attr(void)
{
    gni_smsg_attr_t a;
    memset(&a, 0, sizeof a);
    a.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
    a.mbox_maxcredit = 4;
    a.msg_maxsize = 64;
    return a;
}

static int child(uint32_t inst)
{
    int spawned;
    CHECK(PMI_Init(&spawned) == PMI_SUCCESS);
    gni_cdm_handle_t cdm;
    gni_nic_handle_t nic;
    gni_cq_handle_t cq;
    uint32_t addr;
    GNI_OK(GNI_CdmCreate(inst, (uint8_t)gnit_env("PMI_GNI_PTAG"), (uint32_t)gnit_env("PMI_GNI_COOKIE"), 0, &cdm));
    GNI_OK(GNI_CdmAttach(cdm, (uint32_t)gnit_env("PMI_GNI_DEV_ID"), &addr, &nic));
    GNI_OK(GNI_CqCreate(nic, 64, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
    gni_smsg_attr_t a = smsg_attr();
    unsigned int mbsz;
    GNI_OK(GNI_SmsgBufferSizeNeeded(&a, &mbsz));
    uint8_t *win = dt_alloc(WIN + mbsz);
    gni_mem_handle_t mh;
    GNI_OK(GNI_MemRegister(nic, (uint64_t)(uintptr_t)win, WIN + mbsz, cq, GNI_MEM_READWRITE, (uint32_t)-1, &mh));
    printf("%u %llu %llu %llu %u\n", addr, (unsigned long long)(uintptr_t)win, (unsigned long long)mh.qword1,
           (unsigned long long)mh.qword2, mbsz);
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) return 1;   /* "exit" (or EOF): die without cleaning up */
    _exit(0);
}

/* Posts with a GLOBAL event and waits for it: the return code of the wait. */
static gni_return_t post_and_wait(gnit_t *t, gni_ep_handle_t ep, gni_post_descriptor_t *d, int rdma)
{
    GNI_OK(rdma ? GNI_PostRdma(ep, d) : GNI_PostFma(ep, d));
    gni_cq_entry_t ev = 0;
    gni_return_t rc = GNI_CqWaitEvent(t->cq, 1000, &ev);
    if (rc == GNI_RC_SUCCESS || rc == GNI_RC_TRANSACTION_ERROR) {
        gni_post_descriptor_t *done = NULL;
        gni_return_t grc = GNI_GetCompleted(t->cq, ev, &done);
        CHECK(done == d);
        CHECK_EQ(grc, rc);
        CHECK_EQ(d->status != 0, rc == GNI_RC_TRANSACTION_ERROR);
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "child")) return child((uint32_t)atoi(argv[2]));
    gnit_t t;
    gnit_init(&t, 256);

    int to_child[2], from_child[2];
    CHECK(pipe(to_child) == 0 && pipe(from_child) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        /* A singleton: no launcher connection of the parent's. */
        unsetenv("PMI_FD"); unsetenv("PMI_PORT"); unsetenv("PMI_ID"); unsetenv("PMI_RANK"); unsetenv("PMI_SIZE");
        char inst[16];
        snprintf(inst, sizeof inst, "%d", CHILD_INST + t.rank);
        execl("/proc/self/exe", argv[0], "child", inst, (char *)NULL);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    FILE *in = fdopen(from_child[0], "r");
    unsigned int caddr, mbsz;
    unsigned long long cbase, q1, q2;
    CHECK(fscanf(in, "%u %llu %llu %llu %u", &caddr, &cbase, &q1, &q2, &mbsz) == 5);
    gni_mem_handle_t cmh = { .qword1 = q1, .qword2 = q2 };

    gni_ep_handle_t ep;
    GNI_OK(GNI_EpCreate(t.nic, t.cq, &ep));
    GNI_OK(GNI_EpBind(ep, caddr, CHILD_INST + t.rank));
    uint8_t *buf = dt_alloc(WIN + mbsz);
    gni_mem_handle_t mh = dt_reg(&t, buf, WIN + mbsz, NULL, GNI_MEM_READWRITE);
    gni_smsg_attr_t l = smsg_attr(), r = smsg_attr();
    l.msg_buffer = buf; l.buff_size = mbsz; l.mem_hndl = mh; l.mbox_offset = WIN;
    r.msg_buffer = (void *)(uintptr_t)cbase; r.buff_size = mbsz; r.mem_hndl = cmh; r.mbox_offset = WIN;
    GNI_OK(GNI_SmsgInit(ep, &l, &r));

    for (int round = 0; round < 2; round++) {
        gni_return_t want = round == 0 ? GNI_RC_SUCCESS : GNI_RC_TRANSACTION_ERROR;
        double t0 = dt_now();
        gni_post_descriptor_t d;
        dt_desc(&d, GNI_POST_FMA_PUT, GNI_CQMODE_GLOBAL_EVENT, buf, mh, cbase, cmh, 64);
        CHECK_EQ(post_and_wait(&t, ep, &d, 0), want);
        dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, buf + 64, mh, cbase + 128, cmh, 8);
        d.amo_cmd = GNI_FMA_ATOMIC_FADD;
        d.first_operand = 1;
        CHECK_EQ(post_and_wait(&t, ep, &d, 0), want);
        dt_desc(&d, GNI_POST_RDMA_GET, GNI_CQMODE_GLOBAL_EVENT, buf + 256, mh, cbase + 256, cmh, 256);
        CHECK_EQ(post_and_wait(&t, ep, &d, 1), want);
        uint64_t msg = 7;
        GNI_OK(GNI_SmsgSend(ep, &msg, sizeof msg, NULL, 0, 99));
        gni_cq_entry_t ev = 0;
        CHECK_EQ(GNI_CqWaitEvent(t.cq, 1000, &ev), want);
        CHECK_EQ(GNI_CQ_GET_TYPE(ev), GNI_CQ_EVENT_TYPE_SMSG);
        CHECK_EQ(GNI_CQ_GET_MSG_ID(ev), 99);
        CHECK(dt_now() - t0 < 5);
        if (round == 0) {
            printf("data_peer_death: helper alive: PUT, AMO, RDMA GET, SMSG ok\n");
            /* The helper exits without any cleanup, and is reaped. */
            CHECK(write(to_child[1], "exit\n", 5) == 5);
            int st;
            CHECK(waitpid(pid, &st, 0) == pid);
            CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
            usleep(20000);   /* past the liveness-probe interval */
        }
    }
    printf("data_peer_death: helper dead: every operation completed with a transaction error\n");
    GNI_OK(GNI_MemDeregister(t.nic, &mh));
    GNI_OK(GNI_EpUnbind(ep));
    GNI_OK(GNI_EpDestroy(ep));
    gnit_fini(&t);
    printf("data_peer_death: rank %d ok\n", t.rank);
    return 0;
}
