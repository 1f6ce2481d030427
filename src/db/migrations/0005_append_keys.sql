CREATE TABLE "append_keys" (
	"lineage_id" text NOT NULL,
	"append_key" text NOT NULL,
	"batch_hash" text NOT NULL,
	"result" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "append_keys_lineage_id_append_key_pk" PRIMARY KEY("lineage_id","append_key")
);
--> statement-breakpoint
ALTER TABLE "append_keys" ADD CONSTRAINT "append_keys_lineage_id_lineages_id_fk" FOREIGN KEY ("lineage_id") REFERENCES "public"."lineages"("id") ON DELETE no action ON UPDATE no action;