-- Stored quote answers (issue 45; src/quotes/quotes.ts STORED_ANSWERS_SQL): each item's market quotes as answer
-- text, made once per change instead of once per replica and cache miss, and the epoch that makes them all stale
-- (bumped by writes of source quotes without change rows). The change sequence gets an (item_id, seq) index: the
-- check that no change of an item follows its stored answer.

-- CreateTable
CREATE TABLE "quote_answer" (
    "item_id" INTEGER NOT NULL,
    "epoch" BIGINT NOT NULL,
    "seq" BIGINT NOT NULL,
    "head" TEXT,
    "tail" TEXT,

    CONSTRAINT "quote_answer_pkey" PRIMARY KEY ("item_id")
);

-- CreateTable
CREATE TABLE "quote_answer_epoch" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "epoch" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "quote_answer_epoch_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "quote_change_item_id_seq_idx" ON "quote_change"("item_id", "seq");

-- AddForeignKey
ALTER TABLE "quote_answer" ADD CONSTRAINT "quote_answer_item_id_fkey" FOREIGN KEY ("item_id") REFERENCES "item"("id") ON DELETE CASCADE ON UPDATE CASCADE;

INSERT INTO "quote_answer_epoch" ("id", "epoch") VALUES (1, 0);
