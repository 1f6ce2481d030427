-- Retention never takes a lineage's lock. The foreign key from pruned_messages to lineages made
-- every insert of a pruned range take the lineage row's key lock (FOR KEY SHARE) until the
-- batch committed, and a batch commits only after its export file is written: appends, which
-- lock the lineage row FOR UPDATE, waited for the file. Without the key, integrity still holds:
-- only retention_prune writes pruned ranges, from message rows it holds locked (FOR UPDATE),
-- and session_erase deletes a lineage's messages (waiting for those row locks, so for the
-- batch's commit) before it deletes its pruned ranges, in a later statement that sees them.
ALTER TABLE "pruned_messages" DROP CONSTRAINT IF EXISTS "pruned_messages_lineage_id_lineages_id_fk";
