/* reservation.c: occupancy in Redis through Lua scripts (see reservation.h). */
#include "services/scheduler/reservation.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- scripts ----------------------------------------------------------------------------- */

/* ARGV: prefix, mode ("check" | "rebuild"), nsessions, then per session:
 *   session id, nkernels, nusage, (usage id, limit)..., per kernel: kernel, agent, slots, devs.
 * A limit ("sessions=3 cpu=4000", "" = none) is checked against usage:<id>
 * before anything is reserved (mode check): what every scheduler instance
 * placed counts. Returns one string per session: "ok", "exists" (every
 * kernel reserved already, by this session, on the agents asked: a retry),
 * "taken" (every kernel reserved by this session, but elsewhere: another
 * instance placed it), "refused:limit:<usage id>:<what>" or "refused:<why>". */
static const char RESERVE_LUA[] =
    "local P, mode, nsess = ARGV[1], ARGV[2], tonumber(ARGV[3])\n"
    "local i, out = 4, {}\n"
    "local locked = mode ~= 'rebuild' and redis.call('EXISTS', P..'rebuild') == 1\n"
    "local function parse(enc)\n"
    "  local t = {}\n"
    "  for k, v in string.gmatch(enc, '(%S+)=(%d+)') do t[#t + 1] = {k, v, tonumber(v)} end\n"
    "  return t\n"
    "end\n"
    "for s = 1, nsess do\n"
    "  local sid, nk, nu = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])\n"
    "  i = i + 3\n"
    "  local usage, limits = {}, {}\n"
    "  for u = 1, nu do usage[u] = ARGV[i]; limits[u] = ARGV[i + 1]; i = i + 2 end\n"
    "  local ks = {}\n"
    "  for k = 1, nk do\n"
    "    ks[k] = {id = ARGV[i], agent = ARGV[i + 1], slots = parse(ARGV[i + 2]),\n"
    "             slots_enc = ARGV[i + 2], devs = parse(ARGV[i + 3]), devs_enc = ARGV[i + 3]}\n"
    "    i = i + 4\n"
    "  end\n"
    "  local verdict\n"
    "  if locked then verdict = 'refused:occupancy is being rebuilt' end\n"
    "  local existing, elsewhere = 0, false\n"
    "  if not verdict then\n"
    "    for k = 1, nk do\n"
    "      local f = redis.call('HMGET', P..'alloc:'..ks[k].id, 'session', 'agent')\n"
    "      local owner = f[1]\n"
    "      if owner then\n"
    "        existing = existing + 1\n"
    "        if f[2] ~= ks[k].agent then elsewhere = true end\n"
    "        if owner ~= sid then verdict = 'refused:kernel '..ks[k].id..' is reserved by "
    "session '..owner end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  if not verdict and existing == nk and elsewhere then verdict = 'taken'\n"
    "  elseif not verdict and existing == nk then verdict = 'exists'\n"
    "  elseif not verdict and existing > 0 then\n"
    "    verdict = 'refused:some kernels of session '..sid..' are reserved already'\n"
    "  end\n"
    "  if not verdict and mode ~= 'rebuild' then\n"
    "    local total = {}\n"
    "    for k = 1, nk do\n"
    "      for _, kv in ipairs(ks[k].slots) do total[kv[1]] = (total[kv[1]] or 0) + kv[3] end\n"
    "    end\n"
    "    for u = 1, nu do\n"
    "      if limits[u] ~= '' then\n"
    "        local lim, names = parse(limits[u]), {}\n"
    "        for x, kv in ipairs(lim) do names[x] = kv[1] end\n"
    "        local h = redis.call('HMGET', P..'usage:'..usage[u], unpack(names))\n"
    "        for x, kv in ipairs(lim) do\n"
    "          local cur, add = tonumber(h[x] or '0'), (kv[1] == 'sessions') and 1 or "
    "(total[kv[1]] "
    "or 0)\n"
    "          if add > 0 and cur + add > kv[3] then\n"
    "            verdict = 'refused:limit:'..usage[u]..':'..kv[1]..' '..cur..' held + '..add..' > "
    "'..kv[3]; break\n"
    "          end\n"
    "        end\n"
    "        if verdict then break end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  if not verdict and mode ~= 'rebuild' then\n"
    "    local need, order = {}, {}\n"
    "    for k = 1, nk do\n"
    "      local a = need[ks[k].agent]\n"
    "      if not a then a = {slots = {}, devs = {}}; need[ks[k].agent] = a; order[#order + 1] = "
    "ks[k].agent end\n"
    "      for _, kv in ipairs(ks[k].slots) do a.slots[kv[1]] = (a.slots[kv[1]] or 0) + kv[3] end\n"
    "      for _, kv in ipairs(ks[k].devs) do a.devs[kv[1]] = (a.devs[kv[1]] or 0) + kv[3] end\n"
    "    end\n"
    "    for _, ag in ipairs(order) do\n"
    "      local names = {'schedulable'}\n"
    "      for slot, _ in pairs(need[ag].slots) do\n"
    "        names[#names + 1] = 'cap:'..slot; names[#names + 1] = 'used:'..slot\n"
    "      end\n"
    "      for dev, _ in pairs(need[ag].devs) do\n"
    "        names[#names + 1] = 'devcap:'..dev; names[#names + 1] = 'dev:'..dev\n"
    "      end\n"
    "      local h = redis.call('HMGET', P..'agent:'..ag, unpack(names))\n"
    "      if not h[1] then verdict = 'refused:agent '..ag..' is not known'; break end\n"
    "      local f = {}\n"
    "      for x = 1, #names do f[names[x]] = h[x] or nil end\n"
    "      if f['schedulable'] == '0' then verdict = 'refused:agent '..ag..' is not "
    "schedulable'; break end\n"
    "      for slot, amt in pairs(need[ag].slots) do\n"
    "        if amt > 0 and tonumber(f['used:'..slot] or '0') + amt > tonumber(f['cap:'..slot] "
    "or '0') then\n"
    "          verdict = 'refused:agent '..ag..' has not enough '..slot; break\n"
    "        end\n"
    "      end\n"
    "      if verdict then break end\n"
    "      for dev, amt in pairs(need[ag].devs) do\n"
    "        if tonumber(f['dev:'..dev] or '0') + amt > tonumber(f['devcap:'..dev] or '0') then\n"
    "          verdict = 'refused:agent '..ag..' device '..dev..' has not enough shares'; break\n"
    "        end\n"
    "      end\n"
    "      if verdict then break end\n"
    "    end\n"
    "  end\n"
    "  if not verdict then\n"
    "    for k = 1, nk do\n"
    "      local kk = ks[k]\n"
    "      local akey = P..'agent:'..kk.agent\n"
    "      for _, kv in ipairs(kk.slots) do\n"
    "        redis.call('HINCRBY', akey, 'used:'..kv[1], kv[2])\n"
    "        for _, u in ipairs(usage) do redis.call('HINCRBY', P..'usage:'..u, kv[1], kv[2]) end\n"
    "      end\n"
    "      for _, kv in ipairs(kk.devs) do redis.call('HINCRBY', akey, 'dev:'..kv[1], kv[2]) end\n"
    "      redis.call('HSET', P..'alloc:'..kk.id, 'session', sid, 'agent', kk.agent,\n"
    "                 'slots', kk.slots_enc, 'devs', kk.devs_enc, 'usage', table.concat(usage, ' "
    "'))\n"
    "    end\n"
    "    redis.call('INCRBY', P..'sess:'..sid, nk)\n"
    "    for _, u in ipairs(usage) do redis.call('HINCRBY', P..'usage:'..u, 'sessions', 1) end\n"
    "    verdict = 'ok'\n"
    "  end\n"
    "  out[s] = verdict\n"
    "end\n"
    "return out\n";

struct resv {
    rds *r;
    char *prefix;
    rds_script reserve;
    occ *occ; /* capacity and rebuild (libcommon/occupancy.c) */
};

resv *resv_new(rds *r, const char *prefix)
{
    resv *v = ts_calloc(1, sizeof(*v));
    v->r = r;
    v->prefix = ts_strdup(prefix ? prefix : "");
    v->reserve.source = RESERVE_LUA;
    v->occ = occ_new(r, v->prefix);
    return v;
}

void resv_free(resv *v)
{
    if (!v) return;
    occ_free(v->occ);
    free(v->prefix);
    free(v);
}

/* ---- argument building ------------------------------------------------------------------- */

static redisReply *eval(resv *v, rds_script *s, rds_args *a, ts_err *err)
{
    return rds_eval_args(v->r, s, a, err);
}

/* ---- operations -------------------------------------------------------------------------- */

static bool run_reserve(resv *v, const char *mode, const resv_session *s, int n, resv_result *out,
                        ts_err *err)
{
    rds_args a = {0};
    rds_args_push(&a, v->prefix);
    rds_args_push(&a, mode);
    rds_args_own(&a, ts_asprintf("%d", n));
    bool ok = occ_push_sessions(&a, s, n, err);
    redisReply *rep = ok ? eval(v, &v->reserve, &a, err) : NULL;
    rds_args_free(&a);
    if (!rep) return false;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != (size_t)n) {
        ts_err_set(err, "Redis reserve: unexpected reply");
        freeReplyObject(rep);
        return false;
    }
    for (int i = 0; i < n; i++) {
        const char *r = rep->element[i]->type == REDIS_REPLY_STRING ? rep->element[i]->str : "?";
        out[i].reason[0] = '\0';
        if (strcmp(r, "ok") == 0) {
            out[i].status = RESV_OK;
        } else if (strcmp(r, "exists") == 0) {
            out[i].status = RESV_EXISTS;
        } else if (strcmp(r, "taken") == 0) {
            out[i].status = RESV_TAKEN;
        } else {
            out[i].status = RESV_REFUSED;
            ts_strlcpy(out[i].reason, strncmp(r, "refused:", 8) == 0 ? r + 8 : r,
                       sizeof(out[i].reason));
        }
    }
    freeReplyObject(rep);
    return true;
}

bool resv_reserve(resv *v, const resv_session *s, int n, resv_result *out, ts_err *err)
{
    if (n <= 0) return true;
    return run_reserve(v, "check", s, n, out, err);
}

bool resv_release(resv *v, const char *const *kernel_ids, int n, bool *released, int *count,
                  ts_err *err)
{
    return occ_release(v->occ, kernel_ids, n, released, count, err);
}

bool resv_set_agent(resv *v, const resv_agent *ag, ts_err *err)
{
    return occ_set_agent(v->occ, ag, err);
}

bool resv_read_agent(resv *v, const char *id, slots_t *total, slots_t *used, int *ndev,
                     int32_t dev_cap[32], int32_t dev_used[32], ts_err *err)
{
    char *key = occ_key(v->occ, OCC_KEY_AGENT, id);
    const char *argv[2] = {"HGETALL", key};
    redisReply *rep = rds_command(v->r, 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0) {
        ts_err_set(err, "agent %s is not in Redis", id);
        freeReplyObject(rep);
        return false;
    }
    slots_clear(total);
    slots_clear(used);
    *ndev = 0;
    memset(dev_cap, 0, sizeof(int32_t) * 32);
    memset(dev_used, 0, sizeof(int32_t) * 32);
    for (size_t i = 0; i + 1 < rep->elements; i += 2) {
        const char *f = rep->element[i]->str, *val = rep->element[i + 1]->str;
        long long n = strtoll(val ? val : "0", NULL, 10);
        if (!f) continue;
        if (strncmp(f, "cap:", 4) == 0 || strncmp(f, "used:", 5) == 0) {
            bool cap = f[0] == 'c';
            int sid;
            if (slot_intern(f + (cap ? 4 : 5), &sid, NULL)) slots_put(cap ? total : used, sid, n);
        } else if (strncmp(f, "devcap:", 7) == 0 || strncmp(f, "dev:", 4) == 0) {
            bool cap = f[3] == 'c';
            int d = atoi(f + (cap ? 7 : 4));
            if (d < 0 || d >= 32) continue;
            (cap ? dev_cap : dev_used)[d] = (int32_t)n;
            if (cap && d + 1 > *ndev) *ndev = d + 1;
        }
    }
    freeReplyObject(rep);
    return true;
}

bool resv_read_drained(resv *v, const char *id, bool *drained, ts_err *err)
{
    char *key = occ_key(v->occ, OCC_KEY_AGENT, id);
    const char *argv[3] = {"HGET", key, "drained"};
    redisReply *rep = rds_command(v->r, 3, argv, NULL, err);
    free(key);
    if (!rep) return false;
    *drained = rep->type == REDIS_REPLY_STRING && strcmp(rep->str, "1") == 0;
    freeReplyObject(rep);
    return true;
}

bool resv_read_usage(resv *v, const char *usage_id, int *sessions, slots_t *used, ts_err *err)
{
    char *key = occ_key(v->occ, OCC_KEY_USAGE, usage_id);
    const char *argv[2] = {"HGETALL", key};
    redisReply *rep = rds_command(v->r, 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    *sessions = 0;
    slots_clear(used);
    for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
        const char *f = rep->element[i]->str, *val = rep->element[i + 1]->str;
        long long n = strtoll(val ? val : "0", NULL, 10);
        if (!f || n <= 0) continue;
        if (strcmp(f, "sessions") == 0) {
            *sessions = n > INT_MAX ? INT_MAX : (int)n;
        } else {
            int sid;
            if (slot_intern(f, &sid, NULL)) slots_put(used, sid, n);
        }
    }
    freeReplyObject(rep);
    return true;
}

bool resv_rebuild(resv *v, const resv_agent *agents, int nagents, const resv_session *sessions,
                  int nsessions, ts_err *err)
{
    return occ_rebuild(v->occ, agents, nagents, sessions, nsessions, err);
}

bool resv_check_invariant(resv *v, bool *holds, char *why, size_t size, ts_err *err)
{
    return occ_check(v->occ, holds, why, size, err);
}
