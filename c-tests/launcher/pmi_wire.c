/* Exercises snrun's PMI-1 server over the raw wire protocol: init, maxes,
 * kvsname, universe size, appnum, process mapping, put/get/barrier across all
 * ranks, getbyidx, error replies, name publishing and finalize.
 * Usage: pmi_wire [ranks-per-node]     (as given to snrun -N; default: all)
 *        pmi_wire badinput             (rank 0 sends garbage; must get errors, not a crash) */
#include "pmiwire.h"

static char line[PW_LINE], v[PW_LINE];

static void bad_input(int rank, const char *jobid)
{
    if (rank != 0) return;
    pw_cmd(line, sizeof line, "cmd=frobnicate a=b\n");
    CHECK(!strcmp(line, "cmd=frobnicate_result rc=-1 msg=unknown_command"));
    pw_cmd(line, sizeof line, "no command here\n");
    CHECK(pw_rc(line) != 0);
    pw_cmd(line, sizeof line, "cmd=put kvsname=%s key=k\n", jobid);
    CHECK(pw_rc(line) != 0);
    pw_cmd(line, sizeof line, "cmd=put kvsname=%s key=%0100d value=v\n", getenv("PMI_JOBID"), 1);
    CHECK(pw_rc(line) != 0);
    pw_cmd(line, sizeof line, "cmd=get kvsname=no_such_kvs key=k\n");
    CHECK(pw_rc(line) != 0);
    pw_cmd(line, sizeof line, "cmd=getbyidx kvsname=%s idx=banana\n", jobid);
    CHECK(pw_rc(line) != 0);
    pw_cmd(line, sizeof line, "cmd=init pmi_version=9 pmi_subversion=9\n");
    CHECK(!strncmp(line, "cmd=response_to_init", 20) && pw_rc(line) != 0);
    /* Non-UTF-8 bytes and control characters. */
    pw_cmd(line, sizeof line, "cmd=\xff\xfe\x01 x=\x80\n");
    CHECK(pw_rc(line) != 0);
    /* Spawn is a multi-line command; snrun refuses it. */
    pw_cmd(line, sizeof line, "mcmd=spawn\nnprocs=1\nexecname=/bin/true\nendcmd\n");
    CHECK(!strncmp(line, "cmd=spawn_result", 16) && pw_rc(line) != 0);
    /* The server still works. */
    pw_cmd(line, sizeof line, "cmd=get_appnum\n");
    CHECK(!strcmp(line, "cmd=appnum appnum=0 rc=0"));
    /* A line that never ends: snrun drops us (EOF) instead of growing forever. */
    static char big[200000];
    memset(big, 'x', sizeof big);
    pw_write(big, sizeof big);
    CHECK(pw_recv(line, sizeof line) == NULL);
    printf("badinput ok\n");
}

int main(int argc, char **argv)
{
    int rank = pw_connect();
    sntest_rank = rank;
    int size = atoi(getenv("PMI_SIZE"));
    /* The kvs name comes from the server so this test also runs under
     * MPICH's mpiexec (the reference server); snrun must match PMI_JOBID. */
    static char jobid[300];

    pw_cmd(line, sizeof line, "cmd=init pmi_version=1 pmi_subversion=1\n");
    CHECK(!strcmp(line, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0"));
    pw_cmd(line, sizeof line, "cmd=get_my_kvsname\n");
    CHECK(pw_rc(line) == 0 && pw_val(line, "kvsname", jobid, sizeof jobid));
    if (getenv("PMI_JOBID")) CHECK(!strcmp(jobid, getenv("PMI_JOBID")));
    if (argc > 1 && !strcmp(argv[1], "badinput")) { bad_input(rank, jobid); return 0; }
    int ppn = argc > 1 ? atoi(argv[1]) : size;

    pw_cmd(line, sizeof line, "cmd=get_maxes\n");
    CHECK(!strcmp(line, "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 rc=0"));
    pw_cmd(line, sizeof line, "cmd=get_universe_size\n");
    CHECK(pw_rc(line) == 0 && pw_val(line, "size", v, sizeof v));
    CHECK_EQ(atoi(v), size);
    pw_cmd(line, sizeof line, "cmd=get_appnum\n");
    CHECK(!strcmp(line, "cmd=appnum appnum=0 rc=0"));

    /* MPICH's block-mapping vector for N ranks, ppn per node. */
    char want[128];
    int full = size / ppn, rem = size % ppn;
    if (full && rem) snprintf(want, sizeof want, "(vector,(0,%d,%d),(%d,1,%d))", full, ppn, full, rem);
    else snprintf(want, sizeof want, "(vector,(0,%d,%d))", full, ppn);
    pw_cmd(line, sizeof line, "cmd=get kvsname=%s key=PMI_process_mapping\n", jobid);
    CHECK(pw_rc(line) == 0 && pw_val(line, "value", v, sizeof v));
    if (strcmp(v, want)) SN_FAIL("PMI_process_mapping %s, expected %s", v, want);

    /* Each rank puts its own key; after the barrier everyone sees all. */
    pw_cmd(line, sizeof line, "cmd=put kvsname=%s key=rank-%d value=val-%d-%d\n", jobid, rank, rank, rank * 7919);
    CHECK(!strcmp(line, "cmd=put_result rc=0 msg=success"));
    pw_cmd(line, sizeof line, "cmd=barrier_in\n");
    CHECK(!strncmp(line, "cmd=barrier_out", 15));
    for (int r = 0; r < size; r++) {
        char exp[64];
        snprintf(exp, sizeof exp, "val-%d-%d", r, r * 7919);
        pw_cmd(line, sizeof line, "cmd=get kvsname=%s key=rank-%d\n", jobid, r);
        CHECK(pw_rc(line) == 0 && pw_val(line, "value", v, sizeof v));
        if (strcmp(v, exp)) SN_FAIL("rank-%d = %s, expected %s", r, v, exp);
    }
    pw_cmd(line, sizeof line, "cmd=get kvsname=%s key=no-such-key\n", jobid);
    CHECK(!strcmp(line, "cmd=get_result rc=-1 msg=key_no-such-key_not_found"));

    /* getbyidx walks every key once: ours plus PMI_process_mapping. */
    char *seen = calloc((size_t)size, 1);
    int idx = 0, count = 0, mapping = 0;
    for (;;) {
        pw_cmd(line, sizeof line, "cmd=getbyidx kvsname=%s idx=%d\n", jobid, idx);
        CHECK(!strncmp(line, "cmd=getbyidx_results", 20));
        if (pw_rc(line) != 0) {
            CHECK(pw_val(line, "reason", v, sizeof v) && !strcmp(v, "no_more_keyvals"));
            break;
        }
        char key[128];
        CHECK(pw_val(line, "key", key, sizeof key) && pw_val(line, "nextidx", v, sizeof v));
        CHECK_EQ(atoi(v), idx + 1);
        idx = atoi(v);
        count++;
        int r;
        if (sscanf(key, "rank-%d", &r) == 1 && r >= 0 && r < size) { CHECK(!seen[r]); seen[r] = 1; }
        else if (!strcmp(key, "PMI_process_mapping")) mapping++;
        else SN_FAIL("unexpected key %s", key);
        CHECK(count <= size + 1);
    }
    CHECK_EQ(count, size + 1);
    CHECK_EQ(mapping, 1);
    for (int r = 0; r < size; r++) CHECK(seen[r]);
    free(seen);

    /* Name service: rank 0 publishes before the barrier, others look it up after. */
    if (rank == 0) {
        pw_cmd(line, sizeof line, "cmd=publish_name service=svc-test port=tcp://x:%d\n", 4242);
        CHECK(!strcmp(line, "cmd=publish_result rc=0 info=ok"));
        pw_cmd(line, sizeof line, "cmd=publish_name service=svc-test port=other\n");
        CHECK(pw_rc(line) != 0);
    }
    pw_cmd(line, sizeof line, "cmd=barrier_in\n");
    CHECK(!strncmp(line, "cmd=barrier_out", 15));
    pw_cmd(line, sizeof line, "cmd=lookup_name service=svc-test\n");
    CHECK(!strcmp(line, "cmd=lookup_result rc=0 info=ok port=tcp://x:4242"));
    pw_cmd(line, sizeof line, "cmd=lookup_name service=svc-missing\n");
    CHECK(pw_val(line, "info", v, sizeof v) && !strcmp(v, "notfound"));
    pw_cmd(line, sizeof line, "cmd=barrier_in\n");
    CHECK(!strncmp(line, "cmd=barrier_out", 15));
    if (rank == 0) {
        pw_cmd(line, sizeof line, "cmd=unpublish_name service=svc-test\n");
        CHECK(!strcmp(line, "cmd=unpublish_result rc=0 info=ok"));
        pw_cmd(line, sizeof line, "cmd=unpublish_name service=svc-test\n");
        CHECK(pw_rc(line) != 0);
        /* A private kvs space. */
        char name[300];
        pw_cmd(line, sizeof line, "cmd=create_kvs\n");
        CHECK(!strncmp(line, "cmd=newkvs", 10) && pw_val(line, "kvsname", name, sizeof name));
        CHECK(strcmp(name, jobid) != 0);
        pw_cmd(line, sizeof line, "cmd=put kvsname=%s key=a value=b\n", name);
        CHECK(pw_rc(line) == 0);
        pw_cmd(line, sizeof line, "cmd=get kvsname=%s key=a\n", name);
        CHECK(pw_rc(line) == 0 && pw_val(line, "value", v, sizeof v) && !strcmp(v, "b"));
        pw_cmd(line, sizeof line, "cmd=destroy_kvs kvsname=%s\n", name);
        CHECK(!strcmp(line, "cmd=kvs_destroyed rc=0"));
        pw_cmd(line, sizeof line, "cmd=get kvsname=%s key=a\n", name);
        CHECK(pw_rc(line) != 0);
    }

    pw_cmd(line, sizeof line, "cmd=finalize\n");
    CHECK(!strncmp(line, "cmd=finalize_ack", 16));
    printf("pmi_wire rank %d of %d ok\n", rank, size);
    return 0;
}
