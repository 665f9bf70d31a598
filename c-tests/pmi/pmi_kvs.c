/* KVS across ranks: put/commit/barrier/get of every rank's keys, values of
 * the maximum length, overwrite, iteration, extra KVS spaces, name publishing. */
#include "pmitest.h"

int main(void)
{
    int rank, size, i;
    pmitest_init(&rank, &size);
    int namemax, keymax, valmax;
    PMI_OK(PMI_KVS_Get_name_length_max(&namemax));
    PMI_OK(PMI_KVS_Get_key_length_max(&keymax));
    PMI_OK(PMI_KVS_Get_value_length_max(&valmax));
    char *kvs = malloc(namemax), *key = malloc(keymax), *val = malloc(valmax), *got = malloc(valmax);
    PMI_OK(PMI_KVS_Get_my_name(kvs, namemax));

    /* rank r puts k<r> = v<r>_<r*r>, a max-length value and one it overwrites */
    snprintf(key, keymax, "k%d", rank);
    snprintf(val, valmax, "v%d_%d", rank, rank * rank);
    PMI_OK(PMI_KVS_Put(kvs, key, val));
    snprintf(key, keymax, "long%d", rank);
    for (i = 0; i < valmax - 1; i++) val[i] = 'a' + (i + rank) % 26;
    val[valmax - 1] = 0;
    PMI_OK(PMI_KVS_Put(kvs, key, val));
    snprintf(key, keymax, "ow%d", rank);
    PMI_OK(PMI_KVS_Put(kvs, key, "first"));
    PMI_OK(PMI_KVS_Put(kvs, key, "second"));
    PMI_OK(PMI_KVS_Commit(kvs));
    PMI_OK(PMI_Barrier());

    for (int r = 0; r < size; r++) {
        char want[64];
        snprintf(key, keymax, "k%d", r);
        snprintf(want, sizeof want, "v%d_%d", r, r * r);
        PMI_OK(PMI_KVS_Get(kvs, key, got, valmax));
        if (strcmp(got, want) != 0) SN_FAIL("get %s = '%s', expected '%s'", key, got, want);
        snprintf(key, keymax, "long%d", r);
        PMI_OK(PMI_KVS_Get(kvs, key, got, valmax));
        CHECK_EQ(strlen(got), valmax - 1);
        for (i = 0; i < valmax - 1; i++) CHECK(got[i] == 'a' + (i + r) % 26);
        snprintf(key, keymax, "ow%d", r);
        PMI_OK(PMI_KVS_Get(kvs, key, got, valmax));
        CHECK(strcmp(got, "second") == 0);
    }

    /* iteration sees at least the three keys of every rank, and no internal keys */
    PMI_OK(PMI_Allgather(&rank, got, sizeof rank)); /* puts internal keys on purpose */
    if (limited_server()) {
        CHECK_EQ(PMI_KVS_Iter_first(kvs, key, keymax, val, valmax), PMI_FAIL);
        char newkvs[512];
        CHECK_EQ(PMI_KVS_Create(newkvs, sizeof newkvs), PMI_FAIL);
    } else {
        int *seen = calloc(size, sizeof(int)), n = 0;
        int rc = PMI_KVS_Iter_first(kvs, key, keymax, val, valmax);
        while (rc == PMI_SUCCESS && key[0]) {
            int r;
            CHECK(strncmp(key, "_sn.", 4) != 0);
            if (sscanf(key, "k%d", &r) == 1 && key[0] == 'k') {
                CHECK(r >= 0 && r < size);
                char want[64];
                snprintf(want, sizeof want, "v%d_%d", r, r * r);
                CHECK(strcmp(val, want) == 0);
                seen[r]++;
            }
            if (++n > 100000) SN_FAIL("iteration does not end");
            rc = PMI_KVS_Iter_next(kvs, key, keymax, val, valmax);
        }
        PMI_OK(rc);
        CHECK(n >= 3 * size);
        for (i = 0; i < size; i++) CHECK_EQ(seen[i], 1);
        /* after the end, still the end */
        PMI_OK(PMI_KVS_Iter_next(kvs, key, keymax, val, valmax));
        CHECK(key[0] == 0 && val[0] == 0);

        /* a private KVS: usable by its creator, then gone */
        char *mine = malloc(namemax);
        PMI_OK(PMI_KVS_Create(mine, namemax));
        CHECK(strcmp(mine, kvs) != 0);
        PMI_OK(PMI_KVS_Put(mine, "x", "y"));
        PMI_OK(PMI_KVS_Commit(mine));
        PMI_OK(PMI_KVS_Get(mine, "x", got, valmax));
        CHECK(strcmp(got, "y") == 0);
        PMI_OK(PMI_KVS_Destroy(mine));
        CHECK_EQ(PMI_KVS_Put(mine, "x", "y"), PMI_ERR_INVALID_KVS);
        CHECK_EQ(PMI_KVS_Destroy(kvs), PMI_ERR_INVALID_KVS); /* the job's own */
    }

    /* names: rank 0 publishes, everyone looks up, rank 0 withdraws */
    PMI_OK(PMI_Barrier());
    if (rank == 0) PMI_OK(PMI_Publish_name("snsvc", "tcp:host:1234"));
    PMI_OK(PMI_Barrier());
    PMI_OK(PMI_Lookup_name("snsvc", got));
    CHECK(strcmp(got, "tcp:host:1234") == 0);
    PMI_OK(PMI_Barrier());
    if (rank == 0) {
        PMI_OK(PMI_Unpublish_name("snsvc"));
        /* hydra ends the job on a failed lookup; check the miss elsewhere */
        if (!under_hydra()) CHECK_EQ(PMI_Lookup_name("snsvc", got), PMI_FAIL);
    }
    PMI_OK(PMI_Barrier());
    PMI_OK(PMI_Finalize());
    if (rank == 0) printf("pmi_kvs: %d ranks ok\n", size);
    return 0;
}
