/* Bad input: NULL pointers, bad lengths, malformed/over-long keys and values,
 * unknown KVS names, Get before Put.  Every call must return the documented
 * code (include/pmi.h) and leave the job usable. */
#include "pmitest.h"

#define EXPECT(call, code) CHECK_EQ((call), (code))

int main(void)
{
    int rank, size, v, appnum;
    EXPECT(PMI_Init(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Initialized(NULL), PMI_ERR_INVALID_ARG);
    pmitest_init(&rank, &size);
    PMI_OK(PMI_Get_appnum(&appnum));

    EXPECT(PMI_Get_size(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_rank(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_universe_size(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_appnum(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_id_length_max(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Get_name_length_max(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Get_key_length_max(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Get_value_length_max(NULL), PMI_ERR_INVALID_ARG);

    int namemax, keymax, valmax;
    PMI_OK(PMI_KVS_Get_name_length_max(&namemax));
    PMI_OK(PMI_KVS_Get_key_length_max(&keymax));
    PMI_OK(PMI_KVS_Get_value_length_max(&valmax));
    char *kvs = malloc(namemax), small[2], *buf = malloc(valmax);
    PMI_OK(PMI_KVS_Get_my_name(kvs, namemax));

    /* identity buffers */
    EXPECT(PMI_Get_id(NULL, 100), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_id(small, 0), PMI_ERR_INVALID_LENGTH);
    EXPECT(PMI_Get_id(small, -5), PMI_ERR_INVALID_LENGTH);
    EXPECT(PMI_Get_id(small, sizeof small), PMI_ERR_INVALID_LENGTH);
    EXPECT(PMI_Get_kvs_domain_id(NULL, 100), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_kvs_domain_id(small, sizeof small), PMI_ERR_INVALID_LENGTH);
    EXPECT(PMI_KVS_Get_my_name(NULL, namemax), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Get_my_name(small, sizeof small), PMI_ERR_INVALID_LENGTH);
    EXPECT(PMI_KVS_Get_my_name(kvs, strlen(kvs)), PMI_ERR_INVALID_LENGTH); /* no room for NUL */

    /* cliques */
    int clique;
    PMI_OK(PMI_Get_clique_size(&clique));
    int *ranks = malloc((clique + 1) * sizeof(int));
    EXPECT(PMI_Get_clique_size(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_clique_ranks(NULL, clique), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_clique_ranks(ranks, clique - 1), PMI_ERR_INVALID_LENGTH);
    EXPECT(PMI_Get_clique_ranks(ranks, -1), PMI_ERR_INVALID_LENGTH);
    EXPECT(PMI_Get_numpes_on_smp(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_pes_on_smp(NULL, clique), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_pes_on_smp(ranks, clique - 1), PMI_ERR_INVALID_LENGTH);

    /* KVS put: names, keys, values */
    char longkey[4096], longval[65536];
    memset(longkey, 'k', keymax); longkey[keymax] = 0;        /* one too long */
    memset(longval, 'v', valmax); longval[valmax] = 0;        /* one too long */
    EXPECT(PMI_KVS_Put(NULL, "k", "v"), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Put("no_such_kvs", "k", "v"), PMI_ERR_INVALID_KVS);
    EXPECT(PMI_KVS_Put(kvs, NULL, "v"), PMI_ERR_INVALID_KEY);
    EXPECT(PMI_KVS_Put(kvs, "", "v"), PMI_ERR_INVALID_KEY);
    EXPECT(PMI_KVS_Put(kvs, "a b", "v"), PMI_ERR_INVALID_KEY);
    EXPECT(PMI_KVS_Put(kvs, "a=b", "v"), PMI_ERR_INVALID_KEY);
    EXPECT(PMI_KVS_Put(kvs, "a\nb", "v"), PMI_ERR_INVALID_KEY);
    EXPECT(PMI_KVS_Put(kvs, "\xff\xfe", "v"), PMI_ERR_INVALID_KEY);
    EXPECT(PMI_KVS_Put(kvs, longkey, "v"), PMI_ERR_INVALID_KEY_LENGTH);
    EXPECT(PMI_KVS_Put(kvs, "k", NULL), PMI_ERR_INVALID_VAL);
    EXPECT(PMI_KVS_Put(kvs, "k", "a b"), PMI_ERR_INVALID_VAL);
    EXPECT(PMI_KVS_Put(kvs, "k", "a\nb"), PMI_ERR_INVALID_VAL);
    EXPECT(PMI_KVS_Put(kvs, "k", longval), PMI_ERR_INVALID_VAL_LENGTH);
    longkey[keymax - 1] = 0; longval[valmax - 1] = 0;         /* now exactly the limit */
    PMI_OK(PMI_KVS_Put(kvs, longkey, longval));
    EXPECT(PMI_KVS_Commit(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Commit("no_such_kvs"), PMI_ERR_INVALID_KVS);
    PMI_OK(PMI_KVS_Commit(kvs));

    /* Get before any Put of that key, bad buffers */
    char key[64];
    snprintf(key, sizeof key, "never%d", rank);
    EXPECT(PMI_KVS_Get(kvs, key, buf, valmax), PMI_ERR_INVALID_KEY);
    EXPECT(PMI_KVS_Get("no_such_kvs", "k", buf, valmax), PMI_ERR_INVALID_KVS);
    EXPECT(PMI_KVS_Get(NULL, "k", buf, valmax), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Get(kvs, NULL, buf, valmax), PMI_ERR_INVALID_KEY);
    EXPECT(PMI_KVS_Get(kvs, longkey, NULL, valmax), PMI_ERR_INVALID_VAL);
    EXPECT(PMI_KVS_Get(kvs, longkey, buf, 0), PMI_ERR_INVALID_VAL_LENGTH);
    EXPECT(PMI_KVS_Get(kvs, longkey, buf, -1), PMI_ERR_INVALID_VAL_LENGTH);
    PMI_OK(PMI_Barrier());
    EXPECT(PMI_KVS_Get(kvs, longkey, buf, valmax - 1), PMI_ERR_INVALID_VAL_LENGTH);
    PMI_OK(PMI_KVS_Get(kvs, longkey, buf, valmax));
    CHECK(strcmp(buf, longval) == 0);

    /* iteration, create, destroy */
    char kb[8];
    EXPECT(PMI_KVS_Iter_first(NULL, kb, sizeof kb, buf, valmax), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Iter_first("no_such_kvs", kb, sizeof kb, buf, valmax), PMI_ERR_INVALID_KVS);
    EXPECT(PMI_KVS_Iter_first(kvs, NULL, sizeof kb, buf, valmax), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Iter_first(kvs, kb, 0, buf, valmax), PMI_ERR_INVALID_KEY_LENGTH);
    EXPECT(PMI_KVS_Iter_next(kvs, kb, sizeof kb, buf, -1), PMI_ERR_INVALID_VAL_LENGTH);
    EXPECT(PMI_KVS_Create(NULL, namemax), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Create(buf, 0), PMI_ERR_INVALID_LENGTH);
    EXPECT(PMI_KVS_Destroy(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_KVS_Destroy("no_such_kvs"), PMI_ERR_INVALID_KVS);

    /* names */
    EXPECT(PMI_Publish_name(NULL, "p"), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Publish_name("s", NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Publish_name("s s", "p"), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Unpublish_name(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Lookup_name(NULL, buf), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Lookup_name("s", NULL), PMI_ERR_INVALID_ARG);

    /* Cray extensions */
    EXPECT(PMI_Get_nid(-1, &v), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_nid(size, &v), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_nid(0, NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Allgather(NULL, ranks, sizeof(int)), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Allgather(&v, NULL, sizeof(int)), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Allgather(&v, ranks, -1), PMI_ERR_INVALID_LENGTH);
    EXPECT(PMI_Bcast(NULL, 4), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Bcast(&v, -4), PMI_ERR_INVALID_LENGTH);
    EXPECT(PMI_Get_rank_in_app(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_app_size(appnum, NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_nidlist_ptr(NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_meshcoord(0, NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_max_dimension(NULL), PMI_ERR_INVALID_ARG);

    /* ranks disagreeing on the allgather length are told so (collective) */
    if (size > 1) {
        long big[2] = {1, 2}, *out = malloc(2 * sizeof(long) * size);
        EXPECT(PMI_Allgather(big, out, rank == 0 ? (int)sizeof(long) : (int)(2 * sizeof(long))),
               PMI_ERR_INVALID_LENGTH);
    }

    /* option parsing */
    int np, sz, argc1 = -1;
    PMI_keyval_t *kv;
    char *args[] = {"a", NULL};
    char **argvp = args;
    EXPECT(PMI_Parse_option(-1, args, &np, &kv, &sz), PMI_ERR_INVALID_NUM_ARGS);
    EXPECT(PMI_Parse_option(1, NULL, &np, &kv, &sz), PMI_ERR_INVALID_ARGS);
    EXPECT(PMI_Parse_option(1, args, NULL, &kv, &sz), PMI_ERR_INVALID_NUM_PARSED);
    EXPECT(PMI_Parse_option(1, args, &np, NULL, &sz), PMI_ERR_INVALID_KEYVALP);
    EXPECT(PMI_Parse_option(1, args, &np, &kv, NULL), PMI_ERR_INVALID_SIZE);
    EXPECT(PMI_Args_to_keyval(NULL, (char *(*)[])&argvp, &kv, &sz), PMI_ERR_INVALID_ARGS);
    EXPECT(PMI_Args_to_keyval(&argc1, (char *(*)[])&argvp, &kv, &sz), PMI_ERR_INVALID_NUM_ARGS);
    EXPECT(PMI_Free_keyvals(NULL, 1), PMI_ERR_INVALID_KEYVALP);
    EXPECT(PMI_Free_keyvals(NULL, -1), PMI_ERR_INVALID_SIZE);
    int olen = 0;
    EXPECT(PMI_Get_options(NULL, &olen), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_options(buf, NULL), PMI_ERR_INVALID_ARG);
    EXPECT(PMI_Get_options(buf, &olen), PMI_ERR_INVALID_LENGTH);

    /* the job still works */
    int *all = malloc(size * sizeof(int));
    PMI_OK(PMI_Allgather(&rank, all, sizeof rank));
    for (int r = 0; r < size; r++) CHECK_EQ(all[r], r);
    PMI_OK(PMI_Finalize());
    if (rank == 0) printf("pmi_badinput: %d ranks ok\n", size);
    return 0;
}
